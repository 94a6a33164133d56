//! The engine-neutral endpoint: built from the supervisor's Kilo endpoint without losing or
//! showing the credentials; the Kilo adapter refuses credentials it cannot use.

use bb_engine_client::transport::EngineAuth;
use secrecy::{ExposeSecret, SecretString};

use crate::KiloAdapter;
use bb_service::{Endpoint, EngineAdapter};

#[test]
fn a_supervised_kilo_endpoint_becomes_http_with_basic_auth() {
    let kilo = crate::supervisor::EngineEndpoint {
        base_url: "http://127.0.0.1:4321".into(),
        username: "kilo".into(),
        password: Some(SecretString::from("s3cret-pw")),
    };
    let endpoint = Endpoint::from(kilo);
    assert_eq!(endpoint.base_url(), "http://127.0.0.1:4321");
    assert_eq!(endpoint.port(), Some(4321));
    assert!(!format!("{endpoint:?}").contains("s3cret-pw"));
    let Endpoint::Http { auth: EngineAuth::Basic { user, password }, .. } = endpoint else {
        panic!("not Basic auth");
    };
    assert_eq!((user.as_str(), password.expose_secret()), ("kilo", "s3cret-pw"));
    assert_eq!(Endpoint::http("http://127.0.0.1/x", EngineAuth::None).port(), None);
}

#[tokio::test]
async fn the_kilo_adapter_refuses_a_bearer_token() {
    let (adapter, _updates) = KiloAdapter::new();
    let bearer = Endpoint::http("http://127.0.0.1:9", EngineAuth::Bearer("t".to_owned().into()));
    let err = adapter.reconnect(bearer).await.unwrap_err();
    assert_eq!(err.code(), "invalid_request");
    assert!(
        adapter.reconnect(Endpoint::http("http://127.0.0.1:9", EngineAuth::None)).await.is_ok()
    );
}
