/*
 * The reference of the JDBC benchmark (tests/benches/jdbc_transfer.rs): a plain Java program
 * that does the copy weft's Transfer does, over JDBC on both sides. It streams
 * `SELECT id, name, amount, day, flag FROM t` from the source (fetch size 10,000, inside a
 * transaction so that PostgreSQL streams), and inserts into table t of an SQLite file through
 * the SQLite JDBC driver, in batches of 10,000 rows, in one transaction. Values are stored as
 * weft stores them: decimals and dates as text, booleans as 0 and 1.
 *
 * Usage: java -cp DRIVERS JdbcCopy SOURCE_URL USER PASSWORD SQLITE_FILE
 * Prints: `copied ROWS rows in SECONDS s` (from the query to the commit, JVM start excluded).
 */
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.LocalDate;
import java.util.Properties;

public final class JdbcCopy {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", args[1]);
        p.setProperty("password", args[2]);
        long start = System.nanoTime();
        long rows = 0;
        try (Connection src = DriverManager.getConnection(args[0], p);
                Connection dst = DriverManager.getConnection("jdbc:sqlite:" + args[3])) {
            src.setAutoCommit(false);
            dst.setAutoCommit(false);
            try (Statement q = src.createStatement();
                    PreparedStatement ins = dst.prepareStatement(
                            "INSERT INTO t (id, name, amount, day, flag) VALUES (?, ?, ?, ?, ?)")) {
                q.setFetchSize(10_000);
                try (ResultSet r = q.executeQuery("SELECT id, name, amount, day, flag FROM t")) {
                    int inBatch = 0;
                    while (r.next()) {
                        ins.setLong(1, r.getLong(1));
                        ins.setString(2, r.getString(2));
                        BigDecimal amount = r.getBigDecimal(3);
                        ins.setString(3, amount == null ? null : amount.toPlainString());
                        LocalDate day = r.getObject(4, LocalDate.class);
                        ins.setString(4, day == null ? null : day.toString());
                        ins.setBoolean(5, r.getBoolean(5));
                        ins.addBatch();
                        rows++;
                        if (++inBatch == 10_000) {
                            ins.executeBatch();
                            inBatch = 0;
                        }
                    }
                    if (inBatch > 0) {
                        ins.executeBatch();
                    }
                }
            }
            dst.commit();
            src.commit();
        }
        double secs = (System.nanoTime() - start) / 1e9;
        System.out.printf("copied %d rows in %.3f s%n", rows, secs);
    }
}
