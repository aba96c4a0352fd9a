/*
 * weft's side of the JDBC bridge (plugins/jdbc).
 *
 * The Rust plugin defines this class in the JVM's system class loader and calls it through
 * JNI. Everything that would otherwise cost one JNI call per value happens here: rows are read
 * from a ResultSet and written into one byte array per batch, and a batch of rows to insert
 * arrives as one byte array that is bound and sent with executeBatch. The format of those
 * arrays is described in plugins/jdbc/src/codec.rs; both sides must change together.
 *
 * Driver jars are loaded by a URLClassLoader whose parent is the platform class loader, and
 * connections are made with Driver.connect (DriverManager does not see drivers of a child
 * loader). The compiled class is committed next to this file (Bridge.class, built with
 * `javac --release 11`); a test checks that it is current.
 */
package weft.jdbc;

import java.io.File;
import java.math.BigDecimal;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Driver;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;

public final class Bridge {
    // Value tags, as in codec.rs.
    static final byte NULL = 0, BOOL = 1, INT = 2, FLOAT = 3, DECIMAL = 4, TEXT = 5, BYTES = 6,
            DATE = 7, TIME = 8, TIMESTAMP = 9, TIMESTAMPTZ = 10;

    /** Marks messages weft wrote itself, which are passed on without the exception's class. */
    static final String OWN = "weft: ";

    private static final Map<String, URLClassLoader> LOADERS = new HashMap<>();

    private final Connection conn;
    private final ArrayList<Savepoint> savepoints = new ArrayList<>();
    private int depth;

    private PreparedStatement queryStatement;
    private ResultSet rows;
    private byte[] kinds;
    private boolean restoreAutoCommit;
    private boolean legacyTemporal;

    private String insertSql;
    private PreparedStatement insertStatement;
    private int[] insertTypes;

    private byte[] buf = new byte[1 << 16];
    private int pos;

    private Bridge(Connection conn) {
        this.conn = conn;
    }

    // ---------------------------------------------------------------- connecting

    /**
     * Opens a connection. `jars` are the driver jars; `driverClass` may be empty, then the
     * first driver declared in a jar's META-INF/services/java.sql.Driver that accepts the URL
     * is used. `options` alternate keys and values of connection properties.
     */
    public static Bridge open(String[] jars, String driverClass, String url, String user,
            String password, String[] options) throws Exception {
        ClassLoader loader = loader(jars);
        Driver driver = driver(loader, jars, driverClass, url);
        Properties props = new Properties();
        for (int i = 0; i + 1 < options.length; i += 2) {
            props.setProperty(options[i], options[i + 1]);
        }
        if (!user.isEmpty()) {
            props.setProperty("user", user);
        }
        if (!password.isEmpty()) {
            props.setProperty("password", password);
        }
        Connection c = driver.connect(url, props);
        if (c == null) {
            throw new IllegalArgumentException(OWN + "driver " + driver.getClass().getName()
                    + " does not accept the URL " + url);
        }
        return new Bridge(c);
    }

    private static synchronized ClassLoader loader(String[] jars) throws Exception {
        StringBuilder key = new StringBuilder();
        URL[] urls = new URL[jars.length];
        for (int i = 0; i < jars.length; i++) {
            File f = new File(jars[i]);
            key.append(jars[i]).append('|').append(f.length()).append('|')
                    .append(f.lastModified()).append('\n');
            urls[i] = f.toURI().toURL();
        }
        String k = key.toString();
        URLClassLoader l = LOADERS.get(k);
        if (l == null) {
            l = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
            LOADERS.put(k, l);
        }
        return l;
    }

    private static Driver driver(ClassLoader loader, String[] jars, String driverClass,
            String url) throws Exception {
        if (!driverClass.isEmpty()) {
            Class<?> c;
            try {
                c = Class.forName(driverClass, true, loader);
            } catch (ClassNotFoundException e) {
                throw new IllegalArgumentException(OWN + "the driver class " + driverClass
                        + " is in none of the installed driver jars (" + jarList(jars)
                        + "); install its jar with jdbcManager");
            }
            if (!Driver.class.isAssignableFrom(c)) {
                throw new IllegalArgumentException(OWN + driverClass
                        + " is not a java.sql.Driver");
            }
            return (Driver) c.getDeclaredConstructor().newInstance();
        }
        List<String> seen = new ArrayList<>();
        java.util.Iterator<Driver> it = ServiceLoader.load(Driver.class, loader).iterator();
        while (true) {
            Driver d;
            try {
                if (!it.hasNext()) {
                    break;
                }
                d = it.next();
            } catch (java.util.ServiceConfigurationError e) {
                // A jar whose driver cannot load (a missing dependency) does not hide the
                // drivers of the other jars.
                seen.add("(unloadable: " + e.getMessage() + ")");
                continue;
            }
            seen.add(d.getClass().getName());
            if (d.acceptsURL(url)) {
                return d;
            }
        }
        throw new IllegalArgumentException(OWN + "no installed JDBC driver accepts the URL " + url
                + " (jars: " + jarList(jars) + "; drivers: "
                + (seen.isEmpty() ? "none" : String.join(", ", seen))
                + "); install one with jdbcManager or name its class with driver=CLASS");
    }

    private static String jarList(String[] jars) {
        if (jars.length == 0) {
            return "none installed";
        }
        List<String> names = new ArrayList<>();
        for (String j : jars) {
            names.add(new File(j).getName());
        }
        return String.join(", ", names);
    }

    /** The database's product name, for choosing a dialect when the URL does not say. */
    public String product() throws SQLException {
        return conn.getMetaData().getDatabaseProductName();
    }

    public void close() throws SQLException {
        try {
            closeQuery();
        } finally {
            try {
                closeInsert();
            } finally {
                conn.close();
            }
        }
    }

    // ---------------------------------------------------------------- errors

    /**
     * One line for a Java exception: its class, SQLState and message, with the chained
     * SQLExceptions (a batch's real cause is often the next exception).
     */
    public static String describe(Throwable t) {
        String m = t.getMessage();
        if (m != null && m.startsWith(OWN)) {
            return m.substring(OWN.length());
        }
        StringBuilder b = new StringBuilder();
        one(b, t);
        if (t instanceof SQLException) {
            SQLException next = ((SQLException) t).getNextException();
            for (int i = 0; next != null && i < 3; i++, next = next.getNextException()) {
                b.append("; caused by ");
                one(b, next);
            }
        }
        Throwable cause = t.getCause();
        if (cause != null && cause != t && !(t instanceof SQLException
                && ((SQLException) t).getNextException() == cause)) {
            b.append("; caused by ");
            one(b, cause);
        }
        return b.toString();
    }

    private static void one(StringBuilder b, Throwable t) {
        b.append(t.getClass().getName());
        if (t instanceof SQLException) {
            String state = ((SQLException) t).getSQLState();
            if (state != null) {
                b.append(" [SQLState ").append(state).append(']');
            }
        }
        b.append(": ").append(t.getMessage() == null ? "(no message)" : t.getMessage());
    }

    // ---------------------------------------------------------------- statements

    /** Runs statements without parameters, one by one; returns the rows they changed. */
    public long script(String[] statements) throws SQLException {
        long changed = 0;
        try (Statement s = conn.createStatement()) {
            for (String sql : statements) {
                boolean result = s.execute(sql);
                while (true) {
                    if (!result) {
                        int n = s.getUpdateCount();
                        if (n == -1) {
                            break;
                        }
                        changed += n;
                    }
                    result = s.getMoreResults();
                }
            }
        }
        return changed;
    }

    /** Runs one statement with parameters; returns the rows it changed. */
    public long execute(String sql, byte[] params) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            ByteBuffer in = ByteBuffer.wrap(params).order(ByteOrder.LITTLE_ENDIAN);
            int n = in.getInt();
            int[] types = parameterTypes(ps, n);
            for (int i = 0; i < n; i++) {
                bind(ps, i + 1, in, types[i]);
            }
            boolean result = ps.execute();
            long changed = 0;
            while (true) {
                if (!result) {
                    int c = ps.getUpdateCount();
                    if (c == -1) {
                        break;
                    }
                    changed += c;
                }
                result = ps.getMoreResults();
            }
            return changed;
        }
    }

    // ---------------------------------------------------------------- queries

    /**
     * Starts a query; returns its header: column count, then for each column its name and
     * kind (a value tag). Rows then come from {@link #fetch}.
     */
    public byte[] query(String sql, byte[] params, int fetchSize) throws SQLException {
        closeQuery();
        // PostgreSQL streams a result only inside a transaction with a fetch size.
        if (depth == 0 && conn.getAutoCommit()) {
            conn.setAutoCommit(false);
            restoreAutoCommit = true;
        }
        try {
            queryStatement = conn.prepareStatement(sql, ResultSet.TYPE_FORWARD_ONLY,
                    ResultSet.CONCUR_READ_ONLY);
            queryStatement.setFetchSize(fetchSize);
            ByteBuffer in = ByteBuffer.wrap(params).order(ByteOrder.LITTLE_ENDIAN);
            int n = in.getInt();
            int[] types = n == 0 ? new int[0] : parameterTypes(queryStatement, n);
            for (int i = 0; i < n; i++) {
                bind(queryStatement, i + 1, in, types[i]);
            }
            rows = queryStatement.executeQuery();
            legacyTemporal = false;
            ResultSetMetaData md = rows.getMetaData();
            int cols = md.getColumnCount();
            kinds = new byte[cols];
            pos = 0;
            putInt(cols);
            for (int i = 1; i <= cols; i++) {
                String label = md.getColumnLabel(i);
                putString(label == null || label.isEmpty() ? md.getColumnName(i) : label);
                int type = md.getColumnType(i);
                // bit(8) and BIT(8) are bit strings, not booleans.
                kinds[i - 1] = type == Types.BIT && md.getPrecision(i) > 1 ? NULL
                        : kind(type, md.getColumnTypeName(i));
                put(kinds[i - 1]);
            }
            return Arrays.copyOf(buf, pos);
        } catch (SQLException | RuntimeException e) {
            closeQuery();
            throw e;
        }
    }

    /** Up to `max` rows of the current query: row count, then the values; 0 rows at the end. */
    public byte[] fetch(int max) throws SQLException {
        pos = 0;
        putInt(0);
        if (rows == null) {
            return Arrays.copyOf(buf, pos);
        }
        int n = 0;
        ResultSet r = rows;
        byte[] k = kinds;
        try {
            while (n < max && r.next()) {
                for (int i = 0; i < k.length; i++) {
                    value(r, i + 1, k[i]);
                }
                n++;
            }
        } catch (SQLException | RuntimeException e) {
            try {
                closeQuery();
            } catch (SQLException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        if (n < max) {
            closeQuery();
        }
        int end = pos;
        pos = 0;
        putInt(n);
        pos = end;
        return Arrays.copyOf(buf, pos);
    }

    /** Ends the current query, if any (also when the reader stops early). */
    public void closeQuery() throws SQLException {
        SQLException first = null;
        try {
            if (rows != null) {
                rows.close();
            }
            if (queryStatement != null) {
                queryStatement.close();
            }
        } catch (SQLException e) {
            first = e;
        }
        rows = null;
        queryStatement = null;
        if (restoreAutoCommit) {
            restoreAutoCommit = false;
            try {
                conn.commit();
                conn.setAutoCommit(true);
            } catch (SQLException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    static byte kind(int type, String typeName) {
        String t = typeName == null ? "" : typeName.toLowerCase();
        switch (type) {
            case Types.BIT:
            case Types.BOOLEAN:
                return BOOL;
            case Types.TINYINT:
            case Types.SMALLINT:
            case Types.INTEGER:
            case Types.BIGINT:
                return INT;
            case Types.REAL:
            case Types.FLOAT:
            case Types.DOUBLE:
                return FLOAT;
            case Types.NUMERIC:
            case Types.DECIMAL:
                return DECIMAL;
            case Types.CHAR:
            case Types.VARCHAR:
            case Types.LONGVARCHAR:
            case Types.NCHAR:
            case Types.NVARCHAR:
            case Types.LONGNVARCHAR:
            case Types.CLOB:
            case Types.NCLOB:
                return TEXT;
            case Types.BINARY:
            case Types.VARBINARY:
            case Types.LONGVARBINARY:
            case Types.BLOB:
                return BYTES;
            case Types.DATE:
                return DATE;
            case Types.TIME:
                return t.contains("tz") || t.contains("with time zone") ? TEXT : TIME;
            case Types.TIMESTAMP:
                return t.contains("tz") || t.contains("with time zone") ? TIMESTAMPTZ : TIMESTAMP;
            case Types.TIMESTAMP_WITH_TIMEZONE:
                return TIMESTAMPTZ;
            default:
                return NULL; // anything else: getObject, as text (or bytes)
        }
    }

    private void value(ResultSet r, int i, byte kind) throws SQLException {
        switch (kind) {
            case BOOL: {
                boolean v = r.getBoolean(i);
                if (r.wasNull()) {
                    put(NULL);
                } else {
                    put(BOOL);
                    put((byte) (v ? 1 : 0));
                }
                return;
            }
            case INT: {
                long v = r.getLong(i);
                if (r.wasNull()) {
                    put(NULL);
                } else {
                    put(INT);
                    putLong(v);
                }
                return;
            }
            case FLOAT: {
                double v = r.getDouble(i);
                if (r.wasNull()) {
                    put(NULL);
                } else {
                    put(FLOAT);
                    putLong(Double.doubleToRawLongBits(v));
                }
                return;
            }
            case DECIMAL: {
                BigDecimal v = r.getBigDecimal(i);
                tagged(DECIMAL, v == null ? null : v.toPlainString());
                return;
            }
            case TEXT:
                tagged(TEXT, r.getString(i));
                return;
            case BYTES: {
                byte[] v = r.getBytes(i);
                if (v == null) {
                    put(NULL);
                } else {
                    put(BYTES);
                    putBytes(v);
                }
                return;
            }
            case DATE: {
                LocalDate v = date(r, i);
                tagged(DATE, v == null ? null : v.toString());
                return;
            }
            case TIME: {
                LocalTime v = time(r, i);
                tagged(TIME, v == null ? null : DateTimeFormatter.ISO_LOCAL_TIME.format(v));
                return;
            }
            case TIMESTAMP: {
                LocalDateTime v = localTimestamp(r, i);
                tagged(TIMESTAMP, v == null ? null : timestamp(v));
                return;
            }
            case TIMESTAMPTZ: {
                OffsetDateTime v = offsetTimestamp(r, i);
                tagged(TIMESTAMPTZ, v == null ? null
                        : DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(v));
                return;
            }
            default: {
                Object v = r.getObject(i);
                if (v == null) {
                    put(NULL);
                } else if (v instanceof byte[]) {
                    put(BYTES);
                    putBytes((byte[]) v);
                } else if (v instanceof Boolean) {
                    put(BOOL);
                    put((byte) (((Boolean) v) ? 1 : 0));
                } else {
                    tagged(TEXT, v.toString());
                }
            }
        }
    }

    // JDBC 4.2's getObject(i, LocalDate.class) and friends, else (drivers such as csvjdbc do
    // not have them) the java.sql types, converted. A driver that lacks them lacks them for
    // the whole query, so it is asked once.

    private LocalDate date(ResultSet r, int i) throws SQLException {
        if (!legacyTemporal) {
            try {
                return r.getObject(i, LocalDate.class);
            } catch (SQLFeatureNotSupportedException | UnsupportedOperationException
                    | AbstractMethodError e) {
                legacyTemporal = true;
            }
        }
        java.sql.Date d = r.getDate(i);
        return d == null ? null : d.toLocalDate();
    }

    private LocalTime time(ResultSet r, int i) throws SQLException {
        if (!legacyTemporal) {
            try {
                return r.getObject(i, LocalTime.class);
            } catch (SQLFeatureNotSupportedException | UnsupportedOperationException
                    | AbstractMethodError e) {
                legacyTemporal = true;
            }
        }
        java.sql.Time t = r.getTime(i);
        return t == null ? null : t.toLocalTime();
    }

    private LocalDateTime localTimestamp(ResultSet r, int i) throws SQLException {
        if (!legacyTemporal) {
            try {
                return r.getObject(i, LocalDateTime.class);
            } catch (SQLFeatureNotSupportedException | UnsupportedOperationException
                    | AbstractMethodError e) {
                legacyTemporal = true;
            }
        }
        java.sql.Timestamp t = r.getTimestamp(i);
        return t == null ? null : t.toLocalDateTime();
    }

    private OffsetDateTime offsetTimestamp(ResultSet r, int i) throws SQLException {
        if (!legacyTemporal) {
            try {
                return r.getObject(i, OffsetDateTime.class);
            } catch (SQLFeatureNotSupportedException | UnsupportedOperationException
                    | AbstractMethodError e) {
                legacyTemporal = true;
            }
        }
        java.sql.Timestamp t = r.getTimestamp(i);
        return t == null ? null : t.toInstant().atOffset(java.time.ZoneOffset.UTC);
    }

    private static String timestamp(LocalDateTime v) {
        String d = v.toLocalDate().toString();
        return d + ' ' + DateTimeFormatter.ISO_LOCAL_TIME.format(v.toLocalTime());
    }

    // ---------------------------------------------------------------- inserts

    /**
     * Inserts `count` rows with the prepared statement `sql` (kept while the same SQL comes
     * again); returns the rows inserted. An empty batch is not sent (HSQLDB throws on one).
     */
    public long insert(String sql, byte[] data, int count, int columns) throws SQLException {
        if (count == 0) {
            return 0;
        }
        if (!sql.equals(insertSql)) {
            closeInsert();
            insertStatement = conn.prepareStatement(sql);
            insertSql = sql;
            insertTypes = parameterTypes(insertStatement, columns);
        }
        PreparedStatement ps = insertStatement;
        ByteBuffer in = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < count; r++) {
            for (int c = 0; c < columns; c++) {
                bind(ps, c + 1, in, insertTypes[c]);
            }
            ps.addBatch();
        }
        int[] counts;
        try {
            counts = ps.executeBatch();
        } catch (BatchUpdateException e) {
            ps.clearBatch();
            throw e;
        }
        long n = 0;
        for (int c : counts) {
            n += c >= 0 ? c : (c == Statement.SUCCESS_NO_INFO ? 1 : 0);
        }
        return n;
    }

    private void closeInsert() throws SQLException {
        if (insertStatement != null) {
            PreparedStatement ps = insertStatement;
            insertStatement = null;
            insertSql = null;
            ps.close();
        }
    }

    /** The SQL types of a statement's parameters, where the driver can tell (else NULL). */
    private static int[] parameterTypes(PreparedStatement ps, int n) {
        int[] types = new int[n];
        Arrays.fill(types, Types.NULL);
        try {
            ParameterMetaData md = ps.getParameterMetaData();
            int known = Math.min(n, md.getParameterCount());
            for (int i = 0; i < known; i++) {
                types[i] = md.getParameterType(i + 1);
                if (types[i] == Types.BIT) {
                    // Booleans are BIT in some drivers, and so are bit strings (bit(8)): a BIT
                    // that is not named a boolean and is wider than one bit is sent as text.
                    String name = md.getParameterTypeName(i + 1);
                    String lower = name == null ? "" : name.toLowerCase();
                    if (!lower.contains("bool") && md.getPrecision(i + 1) != 1) {
                        types[i] = Types.OTHER;
                    }
                }
            }
        } catch (SQLException | RuntimeException e) {
            // Not every driver describes parameters; values are then bound as they are.
        }
        return types;
    }

    /** Binds the next value of `in` to parameter `i`, converting text where the type says. */
    private static void bind(PreparedStatement ps, int i, ByteBuffer in, int type)
            throws SQLException {
        byte tag = in.get();
        switch (tag) {
            case NULL:
                if (type == Types.NULL || type == Types.OTHER) {
                    ps.setObject(i, null);
                } else {
                    ps.setNull(i, type);
                }
                return;
            case BOOL:
                ps.setBoolean(i, in.get() != 0);
                return;
            case INT: {
                long v = in.getLong();
                if (type == Types.BIT || type == Types.BOOLEAN) {
                    ps.setBoolean(i, v != 0); // SQLite keeps booleans as 0 and 1
                } else {
                    ps.setLong(i, v);
                }
                return;
            }
            case FLOAT:
                ps.setDouble(i, Double.longBitsToDouble(in.getLong()));
                return;
            case BYTES: {
                byte[] b = new byte[in.getInt()];
                in.get(b);
                ps.setBytes(i, b);
                return;
            }
            default:
                break;
        }
        String s = string(in);
        try {
            switch (tag) {
                case DECIMAL:
                    ps.setBigDecimal(i, new BigDecimal(s));
                    return;
                case DATE:
                    ps.setObject(i, LocalDate.parse(s));
                    return;
                case TIME:
                    ps.setObject(i, LocalTime.parse(s));
                    return;
                case TIMESTAMP:
                    ps.setObject(i, timestamp(s));
                    return;
                case TIMESTAMPTZ:
                    ps.setObject(i, OffsetDateTime.parse(s.replace(' ', 'T')));
                    return;
                default:
                    text(ps, i, s, type);
            }
        } catch (java.time.format.DateTimeParseException | NumberFormatException e) {
            throw new SQLException("parameter " + i + ": `" + s + "` is not a valid "
                    + typeName(tag, type) + ": " + e.getMessage(), "22018");
        }
    }

    /** Text into a parameter of another type: parsed, so that typed databases accept it. */
    private static void text(PreparedStatement ps, int i, String s, int type)
            throws SQLException {
        switch (type) {
            case Types.TINYINT:
            case Types.SMALLINT:
            case Types.INTEGER:
            case Types.BIGINT:
                ps.setLong(i, Long.parseLong(s.trim()));
                return;
            case Types.NUMERIC:
            case Types.DECIMAL:
                ps.setBigDecimal(i, new BigDecimal(s.trim()));
                return;
            case Types.REAL:
            case Types.FLOAT:
            case Types.DOUBLE:
                ps.setDouble(i, Double.parseDouble(s.trim()));
                return;
            case Types.BIT:
            case Types.BOOLEAN:
                ps.setBoolean(i, bool(s));
                return;
            case Types.DATE:
                ps.setObject(i, LocalDate.parse(s.trim()));
                return;
            case Types.TIME:
                ps.setObject(i, LocalTime.parse(s.trim()));
                return;
            case Types.TIMESTAMP:
                ps.setObject(i, timestamp(s.trim()));
                return;
            case Types.TIMESTAMP_WITH_TIMEZONE:
                ps.setObject(i, OffsetDateTime.parse(s.trim().replace(' ', 'T')));
                return;
            case Types.OTHER:
                // uuid, json, and other types of the database's own: the database converts.
                ps.setObject(i, s, Types.OTHER);
                return;
            default:
                ps.setString(i, s);
        }
    }

    private static boolean bool(String s) {
        switch (s.trim().toLowerCase()) {
            case "1": case "t": case "true": case "y": case "yes": case "on":
                return true;
            case "0": case "f": case "false": case "n": case "no": case "off":
                return false;
            default:
                throw new NumberFormatException("not a boolean (true/false, 1/0, yes/no)");
        }
    }

    /** A timestamp from text, with its offset when the text has one. */
    private static Object timestamp(String s) {
        String t = s.replace(' ', 'T');
        try {
            return LocalDateTime.parse(t);
        } catch (java.time.format.DateTimeParseException e) {
            return OffsetDateTime.parse(t);
        }
    }

    private static String typeName(byte tag, int type) {
        switch (tag) {
            case DECIMAL:
                return "decimal";
            case DATE:
                return "date";
            case TIME:
                return "time";
            case TIMESTAMP:
                return "timestamp";
            case TIMESTAMPTZ:
                return "timestamp with time zone";
            default:
                return "value of SQL type " + type;
        }
    }

    private static String string(ByteBuffer in) {
        int n = in.getInt();
        String s = new String(in.array(), in.position(), n, StandardCharsets.UTF_8);
        in.position(in.position() + n);
        return s;
    }

    // ---------------------------------------------------------------- tables

    /**
     * Columns of a table: the schema and name as the database spells them, a column count,
     * then each column's name, type name, nullable flag and primary key position. The name
     * is tried as given, then in upper and lower case (unquoted names fold differently).
     * Without a schema, the connection's current schema comes first; a table found only in
     * several other schemas is an error that names them, never a guess.
     */
    public byte[] describe(String schema, String table) throws SQLException {
        DatabaseMetaData md = conn.getMetaData();
        String[] names = {table, table.toUpperCase(), table.toLowerCase()};
        List<String> schemas = new ArrayList<>();
        if (schema.isEmpty()) {
            String current = null;
            try {
                current = conn.getSchema();
            } catch (SQLException | AbstractMethodError | UnsupportedOperationException e) {
                // Older drivers do not say; any schema is looked at then.
            }
            if (current != null) {
                schemas.add(current);
            }
            schemas.add(null);
        } else {
            schemas.add(schema);
            schemas.add(schema.toUpperCase());
            schemas.add(schema.toLowerCase());
        }
        for (String sch : schemas) {
            for (String name : names) {
                byte[] found = describeExact(md, sch, name);
                if (found != null) {
                    return found;
                }
            }
        }
        throw new IllegalArgumentException(OWN + "table "
                + (schema.isEmpty() ? "" : schema + ".") + table + " does not exist");
    }

    /**
     * A LIKE pattern that matches `name` only. A driver whose escape is itself a wildcard
     * (csvjdbc says `_`) gets the name as it is: the rows are filtered by the very name
     * afterwards anyway.
     */
    private static String exact(DatabaseMetaData md, String name) throws SQLException {
        if (name == null) {
            return null;
        }
        String esc = md.getSearchStringEscape();
        if (esc == null || esc.isEmpty() || esc.contains("_") || esc.contains("%")) {
            return name;
        }
        return name.replace(esc, esc + esc).replace("_", esc + "_").replace("%", esc + "%");
    }

    private byte[] describeExact(DatabaseMetaData md, String schema, String table)
            throws SQLException {
        List<String[]> cols = new ArrayList<>();
        List<String> schemasFound = new ArrayList<>();
        String foundSchema = null;
        try (ResultSet r = md.getColumns(null, exact(md, schema), exact(md, table), null)) {
            while (r.next()) {
                String sch = r.getString("TABLE_SCHEM");
                String tab = r.getString("TABLE_NAME");
                // Patterns aside, only the very name counts (and the schema, when given and
                // the database has schemas: csvjdbc reports none, whatever was asked).
                if (!table.equals(tab) || (schema != null && sch != null && !schema.equals(sch))) {
                    continue;
                }
                if (!schemasFound.contains(String.valueOf(sch))) {
                    schemasFound.add(String.valueOf(sch));
                }
                if (schemasFound.size() == 1) {
                    foundSchema = sch;
                    cols.add(new String[] {r.getString("COLUMN_NAME"), r.getString("TYPE_NAME"),
                            r.getInt("NULLABLE") == DatabaseMetaData.columnNoNulls ? "0" : "1",
                            r.getString("ORDINAL_POSITION")});
                }
            }
        }
        if (cols.isEmpty()) {
            return null;
        }
        if (schemasFound.size() > 1) {
            throw new IllegalArgumentException(OWN + "table " + table
                    + " exists in several schemas (" + String.join(", ", schemasFound)
                    + ") and none is the connection's own; name the schema");
        }
        cols.sort((a, b) -> Integer.compare(Integer.parseInt(a[3]), Integer.parseInt(b[3])));
        Map<String, Integer> key = new HashMap<>();
        try (ResultSet r = md.getPrimaryKeys(null, foundSchema, table)) {
            while (r.next()) {
                key.put(r.getString("COLUMN_NAME"), r.getInt("KEY_SEQ"));
            }
        }
        pos = 0;
        putString(foundSchema == null ? "" : foundSchema);
        putString(table);
        putInt(cols.size());
        for (String[] c : cols) {
            putString(c[0]);
            putString(c[1] == null ? "" : c[1]);
            put((byte) (c[2].equals("1") ? 1 : 0));
            putInt(key.getOrDefault(c[0], 0));
        }
        return Arrays.copyOf(buf, pos);
    }

    // ---------------------------------------------------------------- transactions

    /** Starts a transaction, or a savepoint inside one. */
    public void begin() throws SQLException {
        closeQuery();
        if (depth == 0) {
            conn.setAutoCommit(false);
        } else {
            savepoints.add(conn.setSavepoint());
        }
        depth++;
    }

    /** Commits the innermost transaction. */
    public void commit() throws SQLException {
        if (depth == 0) {
            throw new IllegalStateException(OWN + "commit without a transaction");
        }
        closeQuery();
        depth--;
        if (depth == 0) {
            conn.commit();
            conn.setAutoCommit(true);
        } else {
            Savepoint sp = savepoints.remove(savepoints.size() - 1);
            try {
                conn.releaseSavepoint(sp);
            } catch (SQLException e) {
                // Some drivers cannot release savepoints; the commit of the outer
                // transaction releases them anyway.
            }
        }
    }

    /** Rolls the innermost transaction back. */
    public void rollback() throws SQLException {
        if (depth == 0) {
            throw new IllegalStateException(OWN + "rollback without a transaction");
        }
        try {
            closeQuery();
        } catch (SQLException e) {
            // The rollback below is what matters.
        }
        depth--;
        if (depth == 0) {
            conn.rollback();
            conn.setAutoCommit(true);
        } else {
            conn.rollback(savepoints.remove(savepoints.size() - 1));
        }
    }

    // ---------------------------------------------------------------- the output buffer

    private void ensure(int n) {
        if (pos + n > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, pos + n));
        }
    }

    private void put(byte b) {
        ensure(1);
        buf[pos++] = b;
    }

    private void putInt(int v) {
        ensure(4);
        buf[pos] = (byte) v;
        buf[pos + 1] = (byte) (v >>> 8);
        buf[pos + 2] = (byte) (v >>> 16);
        buf[pos + 3] = (byte) (v >>> 24);
        pos += 4;
    }

    private void putLong(long v) {
        ensure(8);
        for (int i = 0; i < 8; i++) {
            buf[pos + i] = (byte) (v >>> (8 * i));
        }
        pos += 8;
    }

    private void putBytes(byte[] b) {
        putInt(b.length);
        ensure(b.length);
        System.arraycopy(b, 0, buf, pos, b.length);
        pos += b.length;
    }

    private void putString(String s) {
        putBytes(s.getBytes(StandardCharsets.UTF_8));
    }

    private void tagged(byte tag, String s) {
        if (s == null) {
            put(NULL);
        } else {
            put(tag);
            putString(s);
        }
    }
}
