//! Open sets of kinds: how an sdk "enum" gains members without changing the ABI.
//!
//! A `#[repr(u8)]` enum is exhaustive to abi_stable's layout check: a plugin built against an
//! sdk with one variant fewer would be refused by a host that has it. abi_stable's documented
//! way for field-less enums that grow is a struct wrapping an integer, with one associated
//! constant per member. [`open_enum!`] writes that: the constants are named like enum
//! variants, so code reads `Dialect::Sqlite` as before and can match on them, with one `_` arm
//! for members this sdk does not know (a newer host or plugin may send them). The layout is
//! one `u8`, whatever the members.

/// Declares an open set of kinds (see the module documentation).
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(abi_stable::StableAbi, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(u8);

        #[allow(non_upper_case_globals)]
        impl $name {
            $( $(#[$vmeta])* pub const $variant: Self = Self($code); )*

            /// Every member this sdk knows, in code order.
            pub const KNOWN: &'static [Self] = &[$(Self::$variant),*];

            /// The code that crosses the boundary.
            pub const fn code(self) -> u8 {
                self.0
            }

            /// The member with `code`, known to this sdk or not.
            pub const fn from_code(code: u8) -> Self {
                Self(code)
            }

            /// Whether this sdk knows the member (a newer host or plugin may send others).
            pub fn is_known(self) -> bool {
                Self::KNOWN.contains(&self)
            }

            /// The member's name as written in code, or `None` for one this sdk does not
            /// know.
            pub fn known_name(self) -> Option<&'static str> {
                match self {
                    $( Self::$variant => Some(stringify!($variant)), )*
                    _ => None,
                }
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.known_name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
}
