//! The object types `table` (`objectTypeId` 1) and `view` (2): `field1` is the name, `field2`
//! the schema. Two nodes name the same object when connection, schema and name are equal,
//! ignoring case. The check asks the connection to describe the object.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use weft_sdk::{
    Connection, ObjectIdentity, ObjectRef, ObjectType, ObjectTypeInfo, PluginResult, export_plugin,
};

/// A table or a view.
#[derive(Debug, Clone, Copy)]
pub struct Relation {
    id: i64,
    name: &'static str,
}

/// Object type 1.
pub const TABLE: Relation = Relation {
    id: 1,
    name: "table",
};
/// Object type 2.
pub const VIEW: Relation = Relation {
    id: 2,
    name: "view",
};

impl ObjectType for Relation {
    fn info(&self) -> ObjectTypeInfo {
        ObjectTypeInfo::new(self.id, self.name)
    }

    fn identity(&self, object: &ObjectRef) -> ObjectIdentity {
        let mut schema = object.schema().unwrap_or_default().to_lowercase();
        // SQLite's `main` is its default schema: `main.t` and `t` are one table.
        if object.dialect() == weft_sdk::Dialect::Sqlite && schema == "main" {
            schema.clear();
        }
        ObjectIdentity::new(
            object.connection_id(),
            &schema,
            &object.name().to_lowercase(),
        )
    }

    fn check(
        &self,
        object: &ObjectRef,
        connection: &mut Connection,
    ) -> PluginResult<Option<String>> {
        match connection.describe(object.schema(), object.name()) {
            Ok(info) if !info.columns().is_empty() => Ok(None),
            Ok(_) | Err(_) => Ok(Some(format!(
                "{} `{}` does not exist on connection {} (yet: another action may create it)",
                self.name,
                object.name(),
                object.connection_id()
            ))),
        }
    }
}

export_plugin! {
    modules: [],
    object_types: [TABLE, VIEW],
    bridges: [],
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(schema: Option<&str>, name: &str, dialect: weft_sdk::Dialect) -> ObjectRef {
        ObjectRef::new(1, 1, 3, name, schema, dialect)
    }

    #[test]
    fn identity_ignores_case_and_sqlite_main() {
        const SQLITE: weft_sdk::Dialect = weft_sdk::Dialect::Sqlite;
        const POSTGRES: weft_sdk::Dialect = weft_sdk::Dialect::Postgres;
        assert_eq!(
            TABLE.identity(&obj(Some("MAIN"), "Orders", SQLITE)),
            TABLE.identity(&obj(None, "orders", SQLITE))
        );
        assert_ne!(
            TABLE.identity(&obj(Some("main"), "orders", POSTGRES)),
            TABLE.identity(&obj(None, "orders", POSTGRES))
        );
        assert_eq!(
            TABLE.identity(&obj(Some("Sales"), "T", POSTGRES)).schema(),
            "sales"
        );
    }
}
