-- The app a database belongs to (specification section 2): its bundleId and whether it
-- holds signed (Production, Sandbox) or unsigned (Xcode, LocalTesting) data,
-- recorded by the first command that opens the database with a configuration
-- (a new database, or one made before this table existed). A configuration
-- naming another bundleId or the other class is refused with DATABASE_MISMATCH.
-- `environments` lists, comma-separated, every environment configured so far.
CREATE TABLE app_binding (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    bundle_id     TEXT    NOT NULL,
    data_class    TEXT    NOT NULL CHECK (data_class IN ('signed', 'unsigned')),
    environments  TEXT    NOT NULL,
    bound_at      INTEGER NOT NULL
) STRICT;

CREATE TRIGGER app_binding_keeps_its_app BEFORE UPDATE OF bundle_id, data_class ON app_binding
BEGIN SELECT RAISE(ABORT, 'a database belongs to one app: its bundleId and data class never change'); END;
CREATE TRIGGER app_binding_is_kept BEFORE DELETE ON app_binding
BEGIN SELECT RAISE(ABORT, 'a database belongs to one app: its binding is never deleted'); END;
