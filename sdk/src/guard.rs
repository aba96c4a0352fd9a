//! Panic guards: every call into a plugin runs inside `catch_unwind`, so a panic becomes a
//! [`PluginError`] of kind `Panicked` instead of unwinding across the boundary (which would
//! abort the host).

use crate::connection::ConnectionBox;
use crate::error::{PluginError, catch};
use crate::module::ObjectRef;
use crate::module::{
    ActionModule, ActionModuleBox, ActionModuleFfi, ActionModuleFfi_TO, ModuleInfo, RunContext,
    RunOutcome, ValidateInput, ValidateOutput,
};
use crate::object_type::{
    ConnectionBridge, ConnectionBridgeBox, ConnectionBridgeFfi, ConnectionBridgeFfi_TO, KeyEntry,
    ObjectIdentity, ObjectType, ObjectTypeBox, ObjectTypeFfi, ObjectTypeFfi_TO, ObjectTypeInfo,
};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RResult, RString};

/// An author's plugin behind the boundary, every call guarded.
pub struct Guard<T>(pub T);

impl<T: ActionModule> ActionModuleFfi for Guard<T> {
    fn info(&self) -> RResult<ModuleInfo, PluginError> {
        catch(|| Ok(self.0.info()))
    }

    fn validate(&self, input: &ValidateInput) -> RResult<ValidateOutput, PluginError> {
        catch(|| Ok(self.0.validate(input)))
    }

    fn run(&self, ctx: &mut RunContext) -> RResult<RunOutcome, PluginError> {
        catch(|| self.0.run(ctx))
    }
}

impl<T: ObjectType> ObjectTypeFfi for Guard<T> {
    fn info(&self) -> RResult<ObjectTypeInfo, PluginError> {
        catch(|| Ok(self.0.info()))
    }

    fn identity(&self, object: &ObjectRef) -> RResult<ObjectIdentity, PluginError> {
        catch(|| Ok(self.0.identity(object)))
    }

    fn check(
        &self,
        object: &ObjectRef,
        connection: &mut ConnectionBox,
    ) -> RResult<ROption<RString>, PluginError> {
        catch(|| {
            self.0
                .check(object, connection)
                .map(|m| m.map(RString::from).into())
        })
    }
}

impl<T: ConnectionBridge> ConnectionBridgeFfi for Guard<T> {
    fn connection_type(&self) -> RResult<RString, PluginError> {
        catch(|| Ok(RString::from(self.0.connection_type())))
    }

    fn open(&self, entry: &KeyEntry) -> RResult<ConnectionBox, PluginError> {
        catch(|| self.0.open(entry))
    }
}

/// An action module ready to cross the boundary.
pub fn module_box<T: ActionModule>(m: T) -> ActionModuleBox {
    ActionModuleFfi_TO::from_value(Guard(m), TD_Opaque)
}

/// An object type ready to cross the boundary.
pub fn object_type_box<T: ObjectType>(t: T) -> ObjectTypeBox {
    ObjectTypeFfi_TO::from_value(Guard(t), TD_Opaque)
}

/// A bridge ready to cross the boundary.
pub fn bridge_box<T: ConnectionBridge>(b: T) -> ConnectionBridgeBox {
    ConnectionBridgeFfi_TO::from_value(Guard(b), TD_Opaque)
}

/// A connection whose every call is guarded: what a bridge returns from `open`, so that a
/// panic inside a driver becomes an error instead of aborting the host.
pub struct GuardedConnection<T>(pub T);

impl<T: crate::connection::Connection> crate::connection::Connection for GuardedConnection<T> {
    fn dialect(&self) -> crate::value::Dialect {
        catch(|| Ok(self.0.dialect()))
            .into_result()
            .unwrap_or(crate::value::Dialect::Unknown)
    }

    fn execute_batch(&mut self, sql: abi_stable::std_types::RStr<'_>) -> RResult<u64, PluginError> {
        catch(|| self.0.execute_batch(sql).into_result())
    }

    fn execute(
        &mut self,
        sql: abi_stable::std_types::RStr<'_>,
        params: abi_stable::std_types::RSlice<'_, crate::value::Value>,
    ) -> RResult<u64, PluginError> {
        catch(|| self.0.execute(sql, params).into_result())
    }

    fn query(
        &mut self,
        sql: abi_stable::std_types::RStr<'_>,
        params: abi_stable::std_types::RSlice<'_, crate::value::Value>,
        batch_rows: u32,
        sink: crate::connection::RowSink_TO<'_, abi_stable::sabi_types::RMut<'_, ()>>,
    ) -> RResult<u64, PluginError> {
        catch(|| self.0.query(sql, params, batch_rows, sink).into_result())
    }

    fn insert_batch(
        &mut self,
        schema: abi_stable::std_types::ROption<abi_stable::std_types::RStr<'_>>,
        table: abi_stable::std_types::RStr<'_>,
        columns: abi_stable::std_types::RSlice<'_, RString>,
        rows: abi_stable::std_types::RSlice<'_, crate::value::Row>,
    ) -> RResult<u64, PluginError> {
        catch(|| {
            self.0
                .insert_batch(schema, table, columns, rows)
                .into_result()
        })
    }

    fn describe(
        &mut self,
        schema: abi_stable::std_types::ROption<abi_stable::std_types::RStr<'_>>,
        table: abi_stable::std_types::RStr<'_>,
    ) -> RResult<crate::value::TableInfo, PluginError> {
        catch(|| self.0.describe(schema, table).into_result())
    }

    fn begin(&mut self) -> RResult<(), PluginError> {
        catch(|| self.0.begin().into_result())
    }

    fn commit(&mut self) -> RResult<(), PluginError> {
        catch(|| self.0.commit().into_result())
    }

    fn rollback(&mut self) -> RResult<(), PluginError> {
        catch(|| self.0.rollback().into_result())
    }
}

/// A connection ready to cross the boundary, every call guarded against panics. Bridges
/// return their connections through this.
pub fn connection_box<T: crate::connection::Connection + 'static>(c: T) -> ConnectionBox {
    crate::connection::Connection_TO::from_value(GuardedConnection(c), TD_Opaque)
}

/// A logger whose calls are guarded.
pub struct GuardedLogger<T>(pub T);

impl<T: crate::module::Logger> crate::module::Logger for GuardedLogger<T> {
    fn log(&mut self, line: abi_stable::std_types::RStr<'_>) {
        let _ = catch(|| {
            self.0.log(line);
            Ok(())
        });
    }
}
