-- weft's clock functions for PostgreSQL connections: current_local_timestamp(),
-- is_dst_change_tonight() and is_dst_change_tonight(ts), as weft's native SQLite connections
-- have them (docs/postgresql.md, "The clock functions").
--
-- The postgresql bridge creates them in the schema `weft_clock` the first time a statement names one
-- of them on a database (version 1 below); a user who may not create a schema there can have
-- an owner run this file once: `psql -d DATABASE -f postgresql-clock.sql`.
--
-- The service clock and zone come with the session: before such a statement the bridge sets
-- weft.zone (the service time zone), weft.now (the service clock's instant), weft.now_at
-- (this server's clock_timestamp() at that moment) and weft.stepped (`on` when the service
-- clock stands still), and appends `weft_clock` to the search_path. Without them (psql, say) the
-- functions read this server's clock in the session's TimeZone.

BEGIN;
SELECT pg_advisory_xact_lock(7243017521);
CREATE SCHEMA IF NOT EXISTS weft_clock;
-- Every user of the database may call them (functions are executable by everyone).
GRANT USAGE ON SCHEMA weft_clock TO PUBLIC;

-- The service clock's now: weft.now moved on by the time since it was set (statement time,
-- so one statement sees one instant), or standing still when the service clock is stepped.
CREATE OR REPLACE FUNCTION weft_clock.service_now() RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
DECLARE
  n text := nullif(current_setting('weft.now', true), '');
BEGIN
  IF n IS NULL THEN
    RETURN statement_timestamp();
  END IF;
  IF current_setting('weft.stepped', true) = 'on' THEN
    RETURN n::timestamptz;
  END IF;
  RETURN n::timestamptz
    + greatest(statement_timestamp() - current_setting('weft.now_at')::timestamptz, interval '0');
END $$;

-- The service time zone (an IANA name), else the session's.
CREATE OR REPLACE FUNCTION weft_clock.service_zone() RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('weft.zone', true), ''), current_setting('TimeZone'))
$$;

-- The zone's UTC offset at instant t.
CREATE OR REPLACE FUNCTION weft_clock.utc_offset(zone text, t timestamptz) RETURNS interval
LANGUAGE sql STABLE AS $$
  SELECT (t AT TIME ZONE zone) - (t AT TIME ZONE 'UTC')
$$;

-- The instant a wall-clock time names in `zone`: its first occurrence when it happens twice
-- (its last when `last`), and the instant the clocks jump at when the zone skips it.
CREATE OR REPLACE FUNCTION weft_clock.instant_of(zone text, local timestamp, last boolean)
RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  before interval := weft_clock.utc_offset(zone, (local - interval '1 day') AT TIME ZONE 'UTC');
  after interval := weft_clock.utc_offset(zone, (local + interval '1 day') AT TIME ZONE 'UTC');
  a timestamptz := (local - before) AT TIME ZONE 'UTC';
  b timestamptz := (local - after) AT TIME ZONE 'UTC';
  lo timestamptz := least(a, b);
  hi timestamptz := greatest(a, b);
  lo_ok boolean := (lo AT TIME ZONE zone) = local;
  hi_ok boolean := (hi AT TIME ZONE zone) = local;
  start interval;
  mid timestamptz;
BEGIN
  IF lo_ok AND hi_ok THEN
    RETURN CASE WHEN last THEN hi ELSE lo END;
  ELSIF lo_ok THEN
    RETURN lo;
  ELSIF hi_ok THEN
    RETURN hi;
  END IF;
  -- A gap: the clocks jump between lo and hi.
  start := weft_clock.utc_offset(zone, lo);
  WHILE hi - lo > interval '1 second' LOOP
    mid := lo + (hi - lo) / 2;
    IF weft_clock.utc_offset(zone, mid) = start THEN
      lo := mid;
    ELSE
      hi := mid;
    END IF;
  END LOOP;
  RETURN hi;
END $$;

-- Now as wall-clock time in the service time zone, to the second.
CREATE OR REPLACE FUNCTION weft_clock.current_local_timestamp() RETURNS timestamp
LANGUAGE sql STABLE AS $$
  SELECT date_trunc('second', weft_clock.service_now() AT TIME ZONE weft_clock.service_zone())
$$;

-- Whether the zone's UTC offset changes between the instant n and 06:00 (its last
-- occurrence) of the day after n's local day.
CREATE OR REPLACE FUNCTION weft_clock.dst_change_before_morning(zone text, n timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
  stop timestamptz := weft_clock.instant_of(zone,
      ((n AT TIME ZONE zone)::date + 1) + time '06:00', true);
  first interval := weft_clock.utc_offset(zone, n);
  t timestamptz := n;
BEGIN
  WHILE t < stop LOOP
    t := least(t + interval '30 minutes', stop);
    IF weft_clock.utc_offset(zone, t) <> first THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END $$;

-- A wall-clock time in the service zone (its first occurrence when it happens twice).
CREATE OR REPLACE FUNCTION weft_clock.is_dst_change_tonight(local_now timestamp) RETURNS boolean
LANGUAGE sql STABLE STRICT AS $$
  SELECT weft_clock.dst_change_before_morning(weft_clock.service_zone(),
      weft_clock.instant_of(weft_clock.service_zone(), local_now, false))
$$;

-- An instant.
CREATE OR REPLACE FUNCTION weft_clock.is_dst_change_tonight(at timestamptz) RETURNS boolean
LANGUAGE sql STABLE STRICT AS $$
  SELECT weft_clock.dst_change_before_morning(weft_clock.service_zone(), at)
$$;

-- Text, as on SQLite: an instant in RFC 3339 (2026-10-24T19:00:00+02:00), or a wall-clock
-- time YYYY-MM-DD HH:MM[:SS] in the service time zone.
CREATE OR REPLACE FUNCTION weft_clock.is_dst_change_tonight(at text) RETURNS boolean
LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
  s text := btrim(at);
BEGIN
  IF s ~ '^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$' THEN
    RETURN weft_clock.is_dst_change_tonight(s::timestamptz);
  ELSIF s ~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$' THEN
    RETURN weft_clock.is_dst_change_tonight(s::timestamp);
  END IF;
  RAISE EXCEPTION 'is_dst_change_tonight: `%` is not a timestamp: use RFC 3339 (2026-10-24T19:00:00+02:00) or YYYY-MM-DD HH:MM[:SS] in the service time zone', at
    USING ERRCODE = '22007';
END $$;

-- From the service clock's instant now.
CREATE OR REPLACE FUNCTION weft_clock.is_dst_change_tonight() RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT weft_clock.dst_change_before_morning(weft_clock.service_zone(), weft_clock.service_now())
$$;

-- Which version of these functions the database holds (the bridge compares it with its own).
CREATE OR REPLACE FUNCTION weft_clock.clock_functions_version() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;

COMMIT;
