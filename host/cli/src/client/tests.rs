//! Where a client finds the service and its token.

use super::*;

#[test]
fn without_a_key_file_the_local_default_address_is_used() {
    let home = tempfile::tempdir().expect("home");
    let s = Service::locate(None, None, None, home.path(), "test").expect("service");
    assert_eq!(s.url, DEFAULT_URL);
    assert!(s.url_from.starts_with("the default"), "{}", s.url_from);
    assert_eq!(s.token_from, "none");
    let s = Service::locate(
        Some("http://h:1/weft/service"),
        Some(" t0k "),
        None,
        home.path(),
        "test",
    )
    .expect("service");
    assert_eq!(
        (s.url.as_str(), s.url_from.as_str()),
        ("http://h:1/weft/service", "--url")
    );
    assert_eq!(s.token.as_deref(), Some("t0k"));
}
