//! Ids made from names. An object written without an id (a folder, a connection, a sheet, a
//! node, an edge, a batch) gets, unless the repository holds one of its name already, the
//! id made here from its kind and its full name (a folder's path, `/folder/sheet`,
//! `/folder/sheet/action`, a batch's or connection's name): the same at every deploy, in
//! every repository. The ids lie from 2^40 to 2^43, far above the ids people write, and low
//! enough that the ids of the objects taken from an action's SQL (`-(action * 1000 + k)`)
//! stay exact in JavaScript's numbers on the page.

use sha2::{Digest, Sha256};

/// The first id made from a name.
pub const FIRST: i64 = 1 << 40;
/// Past the last id made from a name.
pub const END: i64 = 1 << 43;

/// The id of the object of `kind` (`folder`, `connection`, `sheet`, `node`, `edge`, `batch`)
/// named `name`.
pub fn id_of(kind: &str, name: &str) -> i64 {
    let mut h = Sha256::new();
    h.update(kind.as_bytes());
    h.update([0]);
    h.update(name.as_bytes());
    let d = h.finalize();
    let mut eight = [0u8; 8];
    eight.copy_from_slice(&d[..8]);
    let n = u64::from_be_bytes(eight) % (END - FIRST) as u64;
    FIRST + n as i64
}

// Objects from an action's SQL multiply an action's id by 1000: still exact in a JavaScript
// number.
const _: () = assert!((END - 1) * 1000 + 999 < (1 << 53));

/// Whether `id` is one this module could have made.
pub fn is_made(id: i64) -> bool {
    (FIRST..END).contains(&id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_apart_and_in_their_range() {
        let a = id_of("sheet", "/jaffle/models/customers");
        assert_eq!(a, id_of("sheet", "/jaffle/models/customers"));
        assert_ne!(a, id_of("sheet", "/jaffle/models/orders"));
        assert_ne!(a, id_of("node", "/jaffle/models/customers"));
        assert!(is_made(a) && !is_made(17));
    }
}
