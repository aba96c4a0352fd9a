//! Panic guards: every call into a plugin runs inside `catch_unwind`, so a panic becomes a
//! [`PluginError`] of kind `Panicked` instead of unwinding across the boundary (which would
//! abort the host). Connections are guarded where they are made ([`Connection::new`]).

use crate::connection::Connection;
use crate::error::{PluginError, catch};
use crate::module::ObjectRef;
use crate::module::{
    ActionModule, ActionModuleBox, ActionModuleFfi, ActionModuleFfi_TO, ModuleInfo, RunContext,
    RunOutcome, TableName, ValidateInput, ValidateOutput, WrittenTable,
};
use crate::object_type::{
    ConnectionBridge, ConnectionBridgeBox, ConnectionBridgeFfi, ConnectionBridgeFfi_TO, KeyEntry,
    ObjectIdentity, ObjectType, ObjectTypeBox, ObjectTypeFfi, ObjectTypeFfi_TO, ObjectTypeInfo,
};
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RResult, RString, RVec};

/// An author's plugin behind the boundary, every call guarded.
struct Guard<T>(T);

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

    fn writes(&self, input: &ValidateInput) -> RResult<RVec<WrittenTable>, PluginError> {
        catch(|| Ok(self.0.writes(input).into()))
    }

    fn checks(&self, input: &ValidateInput) -> RResult<RVec<TableName>, PluginError> {
        catch(|| Ok(self.0.checks(input).into()))
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
        connection: &mut Connection,
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

    fn open(&self, entry: &KeyEntry) -> RResult<Connection, PluginError> {
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
