//! The object types `table` (`objectTypeId` 1) and `view` (2): `field1` is the name, `field2`
//! the schema. Two nodes name the same object when connection, schema and name are equal,
//! ignoring case. The check asks the connection to describe the object.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use weft_sdk::abi_stable::std_types::ROption;
use weft_sdk::{
    ConnectionBox, ObjectIdentity, ObjectRef, ObjectType, ObjectTypeInfo, PluginResult,
    export_plugin,
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
        ObjectTypeInfo {
            id: self.id,
            name: self.name.into(),
        }
    }

    fn identity(&self, object: &ObjectRef) -> ObjectIdentity {
        let mut schema = match &object.schema {
            ROption::RSome(s) => s.to_lowercase(),
            ROption::RNone => String::new(),
        };
        // SQLite's `main` is its default schema: `main.t` and `t` are one table.
        if object.dialect == weft_sdk::Dialect::Sqlite && schema == "main" {
            schema.clear();
        }
        ObjectIdentity {
            connection_id: object.connection_id,
            schema: schema.into(),
            name: object.name.to_lowercase().into(),
        }
    }

    fn check(
        &self,
        object: &ObjectRef,
        connection: &mut ConnectionBox,
    ) -> PluginResult<Option<String>> {
        let schema = object.schema.as_ref().map(|s| s.as_str().into());
        match connection
            .describe(schema, object.name.as_str().into())
            .into_result()
        {
            Ok(info) if !info.columns.is_empty() => Ok(None),
            Ok(_) | Err(_) => Ok(Some(format!(
                "{} `{}` does not exist on connection {} (yet: another action may create it)",
                self.name, object.name, object.connection_id
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
    use weft_sdk::abi_stable::std_types::RString;

    fn obj(schema: Option<&str>, name: &str, dialect: weft_sdk::Dialect) -> ObjectRef {
        ObjectRef {
            node_id: 1,
            object_type_id: 1,
            connection_id: 3,
            name: name.into(),
            schema: schema.map(RString::from).into(),
            dialect,
        }
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
            TABLE
                .identity(&obj(Some("Sales"), "T", POSTGRES))
                .schema
                .as_str(),
            "sales"
        );
    }
}
