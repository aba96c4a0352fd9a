-- The tables of the example, in the SQLite file of key file entry 1.
CREATE TABLE stg_customer (customer_id INTEGER PRIMARY KEY, name TEXT, city TEXT);
CREATE TABLE dim_customer (
    customer_id     INTEGER NOT NULL,
    name            TEXT,
    city            TEXT,
    valid_from_dt   TEXT NOT NULL,
    invalid_from_dt TEXT,
    PRIMARY KEY (customer_id, valid_from_dt)
);
INSERT INTO stg_customer VALUES (1, 'Ada', 'London'), (2, 'Grace', 'New York');
