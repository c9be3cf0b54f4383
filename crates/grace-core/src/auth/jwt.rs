//! OIDC / JWT bearer tokens (`auth.jwt`): a token an identity provider
//! signed names the principal and its groups.
//!
//! Verified with `jsonwebtoken`: RS256, ES256 and EdDSA only (so `alg:
//! none` and HS256, whose "secret" could be the public key, are refused
//! before any key is looked at); the key chosen by the token's `kid` from
//! the JWKS (`auth.jwt.jwks_file` or `jwks_url`), which is read again on an
//! unknown `kid`, at most once a minute; the issuer, the audience, `exp`
//! and `nbf` checked with `auth.jwt.leeway_seconds`. A token that fails is
//! refused with a reason code ([`JwtError::code`]); it is never read as
//! no token.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};

use crate::access::{Principal, check_groups, valid_name};
use crate::config::JwtConfig;

/// The longest token looked at (bytes); a longer one is refused unread.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The largest JWKS read.
const MAX_JWKS_BYTES: u64 = 1024 * 1024;
/// The soonest the JWKS is read again after an unknown `kid`.
const RELOAD_AFTER: Duration = Duration::from_secs(60);

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Over [`MAX_TOKEN_BYTES`].
    #[error("the token is over {MAX_TOKEN_BYTES} bytes")]
    TooLarge,
    /// Not three base64url parts with a JSON header.
    #[error("not a JWT: {0}")]
    Malformed(String),
    /// An algorithm other than RS256, ES256, EdDSA (`none`, HS256, …).
    #[error("algorithm {0} is not accepted (RS256, ES256 or EdDSA)")]
    Algorithm(String),
    /// No `kid` in the header.
    #[error("the token's header names no key (`kid`)")]
    NoKid,
    /// A `kid` the JWKS does not hold, even read again.
    #[error("no key `{0}` in the JWKS")]
    UnknownKid(String),
    /// The key's type does not fit the token's algorithm.
    #[error("key `{kid}` is not a key for {alg}")]
    KeyMismatch {
        /// The key.
        kid: String,
        /// The token's algorithm.
        alg: String,
    },
    /// `exp` has passed.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is still ahead.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// Another issuer.
    #[error("the token's issuer is not auth.jwt.issuer")]
    Issuer,
    /// Another audience.
    #[error("the token's audience is not auth.jwt.audience")]
    Audience,
    /// The signature does not verify (a tampered token).
    #[error("the signature does not verify")]
    Signature,
    /// A claim is missing or not what GRACE needs.
    #[error("{0}")]
    Claim(String),
    /// The JWKS could not be read.
    #[error("the JWKS cannot be read: {0}")]
    Jwks(String),
}

impl JwtError {
    /// The reason code a 401 carries.
    pub fn code(&self) -> &'static str {
        match self {
            JwtError::TooLarge => "token_too_large",
            JwtError::Malformed(_) => "malformed_token",
            JwtError::Algorithm(_) => "bad_algorithm",
            JwtError::NoKid | JwtError::UnknownKid(_) => "unknown_kid",
            JwtError::KeyMismatch { .. } => "bad_algorithm",
            JwtError::Expired => "expired",
            JwtError::NotYetValid => "not_yet_valid",
            JwtError::Issuer => "wrong_issuer",
            JwtError::Audience => "wrong_audience",
            JwtError::Signature => "bad_signature",
            JwtError::Claim(_) => "bad_claims",
            JwtError::Jwks(_) => "jwks_unavailable",
        }
    }
}

/// Whether `token` looks like a JWT (three dot-separated parts), so that
/// it is verified as one and never taken for another kind of key.
pub fn looks_like_jwt(token: &str) -> bool {
    token.starts_with("eyJ") && token.bytes().filter(|b| *b == b'.').count() == 2
}

/// The keys and when they were read.
struct Keys {
    set: JwkSet,
    read_at: Option<Instant>,
}

/// Verifies tokens against the configured issuer and keys.
pub struct JwtVerifier {
    config: JwtConfig,
    keys: Mutex<Keys>,
    /// For `jwks_url`.
    client: reqwest::Client,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.config.issuer)
            .finish()
    }
}

impl JwtVerifier {
    /// A verifier for `config` (`auth.jwt`); `None` when no issuer is set.
    /// The keys are read at the first token.
    pub fn new(config: &JwtConfig) -> Option<Self> {
        if config.issuer.is_empty() {
            return None;
        }
        Some(Self {
            config: config.clone(),
            keys: Mutex::new(Keys {
                set: JwkSet { keys: Vec::new() },
                read_at: None,
            }),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap_or_default(),
        })
    }

    /// The principal `token` names, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Principal, JwtError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(JwtError::TooLarge);
        }
        let header = decode_header(token).map_err(|e| JwtError::Malformed(e.to_string()))?;
        if !matches!(
            header.alg,
            Algorithm::RS256 | Algorithm::ES256 | Algorithm::EdDSA
        ) {
            return Err(JwtError::Algorithm(format!("{:?}", header.alg)));
        }
        let kid = header.kid.ok_or(JwtError::NoKid)?;
        let key = match self.key(&kid, header.alg)? {
            Some(key) => key,
            None => {
                self.reload_if_due().await?;
                self.key(&kid, header.alg)?
                    .ok_or_else(|| JwtError::UnknownKid(kid.clone()))?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.config.leeway_seconds;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = decode::<serde_json::Value>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            match e.kind() {
                ErrorKind::ExpiredSignature => JwtError::Expired,
                ErrorKind::ImmatureSignature => JwtError::NotYetValid,
                ErrorKind::InvalidIssuer => JwtError::Issuer,
                ErrorKind::InvalidAudience => JwtError::Audience,
                ErrorKind::InvalidSignature => JwtError::Signature,
                ErrorKind::MissingRequiredClaim(c) => {
                    JwtError::Claim(format!("the token has no `{c}` claim"))
                }
                ErrorKind::InvalidAlgorithm => JwtError::Algorithm(format!("{:?}", header.alg)),
                _ => JwtError::Malformed(e.to_string()),
            }
        })?;
        self.principal(&data.claims)
    }

    /// The principal the claims name (`name_claim`, `groups_claim`).
    fn principal(&self, claims: &serde_json::Value) -> Result<Principal, JwtError> {
        let name = claims
            .get(&self.config.name_claim)
            .and_then(|v| v.as_str())
            .ok_or_else(|| {
                JwtError::Claim(format!(
                    "the token has no string `{}` claim (auth.jwt.name_claim)",
                    self.config.name_claim
                ))
            })?;
        if !valid_name(name) {
            return Err(JwtError::Claim(format!(
                "`{}` is not a principal name (auth.jwt.name_claim `{}`)",
                crate::text::truncate_chars(name, 80),
                self.config.name_claim
            )));
        }
        let groups: Vec<String> = match claims.get(&self.config.groups_claim) {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| {
                    JwtError::Claim(format!(
                        "`{}` lists groups as strings (auth.jwt.groups_claim)",
                        self.config.groups_claim
                    ))
                })?,
            Some(_) => {
                return Err(JwtError::Claim(format!(
                    "`{}` is a list of groups (auth.jwt.groups_claim)",
                    self.config.groups_claim
                )));
            }
        };
        check_groups(&groups).map_err(JwtError::Claim)?;
        Ok(Principal::new(name, &groups))
    }

    /// The key `kid` for `alg`, from the keys read so far.
    fn key(&self, kid: &str, alg: Algorithm) -> Result<Option<DecodingKey>, JwtError> {
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        let Some(jwk) = keys.set.find(kid) else {
            return Ok(None);
        };
        let fits = matches!(
            (&jwk.algorithm, alg),
            (AlgorithmParameters::RSA(_), Algorithm::RS256)
                | (AlgorithmParameters::EllipticCurve(_), Algorithm::ES256)
                | (AlgorithmParameters::OctetKeyPair(_), Algorithm::EdDSA)
        );
        if !fits {
            return Err(JwtError::KeyMismatch {
                kid: kid.to_string(),
                alg: format!("{alg:?}"),
            });
        }
        DecodingKey::from_jwk(jwk)
            .map(Some)
            .map_err(|e| JwtError::Jwks(format!("key `{kid}`: {e}")))
    }

    /// Reads the JWKS again, unless it was read less than a minute ago.
    async fn reload_if_due(&self) -> Result<(), JwtError> {
        {
            let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
            if keys.read_at.is_some_and(|t| t.elapsed() < RELOAD_AFTER) {
                return Ok(());
            }
        }
        let set = self.read_jwks().await;
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.read_at = Some(Instant::now());
        match set {
            Ok(set) => {
                tracing::info!(keys = set.keys.len(), "JWKS read");
                keys.set = set;
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the JWKS; the keys read before stay");
                Ok(())
            }
        }
    }

    async fn read_jwks(&self) -> Result<JwkSet, JwtError> {
        let bytes = if !self.config.jwks_url.is_empty() {
            let response = self
                .client
                .get(&self.config.jwks_url)
                .send()
                .await
                .map_err(|e| JwtError::Jwks(e.to_string()))?;
            if !response.status().is_success() {
                return Err(JwtError::Jwks(format!("{}", response.status())));
            }
            if response
                .content_length()
                .is_some_and(|n| n > MAX_JWKS_BYTES)
            {
                return Err(JwtError::Jwks("over 1 MiB".into()));
            }
            let body = response
                .bytes()
                .await
                .map_err(|e| JwtError::Jwks(e.to_string()))?;
            if body.len() as u64 > MAX_JWKS_BYTES {
                return Err(JwtError::Jwks("over 1 MiB".into()));
            }
            body.to_vec()
        } else {
            read_file(&self.config.jwks_file)?
        };
        serde_json::from_slice(&bytes).map_err(|e| JwtError::Jwks(e.to_string()))
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, JwtError> {
    crate::durable::read_capped(path, MAX_JWKS_BYTES)
        .map_err(|e| JwtError::Jwks(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/jwt")
            .join(name)
    }

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    fn claims() -> serde_json::Value {
        json!({"iss": "https://id.example", "aud": "grace", "sub": "ann",
               "groups": ["finance"], "exp": now() + 600, "nbf": now() - 10})
    }

    fn sign(alg: Algorithm, kid: &str, pem: &str, claims: &serde_json::Value) -> String {
        let pem = std::fs::read(fixture(pem)).unwrap();
        let key = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
            Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(&pem),
            _ => unreachable!(),
        }
        .unwrap();
        let mut header = Header::new(alg);
        header.kid = Some(kid.to_string());
        encode(&header, claims, &key).unwrap()
    }

    /// A verifier reading `jwks` (a copy, so a test may rotate it).
    fn verifier(dir: &Path, jwks: &str) -> JwtVerifier {
        let file = dir.join("jwks.json");
        std::fs::copy(fixture(jwks), &file).unwrap();
        JwtVerifier::new(&JwtConfig {
            issuer: "https://id.example".into(),
            audience: "grace".into(),
            jwks_file: file,
            ..JwtConfig::default()
        })
        .unwrap()
    }

    fn b64(v: &serde_json::Value) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    }

    #[tokio::test]
    async fn each_accepted_algorithm_names_the_principal_and_its_groups() {
        let dir = tempfile::tempdir().unwrap();
        let v = verifier(dir.path(), "jwks.json");
        for (alg, kid, pem) in [
            (Algorithm::RS256, "rsa-1", "rs256.pem"),
            (Algorithm::ES256, "ec-1", "es256.pem"),
            (Algorithm::EdDSA, "ed-1", "ed25519.pem"),
        ] {
            let p = v.verify(&sign(alg, kid, pem, &claims())).await.unwrap();
            assert_eq!(
                (p.name.as_str(), p.groups.as_slice()),
                ("ann", ["finance".to_string()].as_slice())
            );
        }
    }

    #[tokio::test]
    async fn every_bad_token_is_refused_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let v = verifier(dir.path(), "jwks.json");
        let with = |changes: serde_json::Value| {
            let mut c = claims();
            for (k, val) in changes.as_object().unwrap() {
                c[k] = val.clone();
            }
            sign(Algorithm::RS256, "rsa-1", "rs256.pem", &c)
        };
        let good = with(json!({}));
        // A payload changed after signing: another principal, same signature.
        let parts: Vec<&str> = good.split('.').collect();
        let mut forged = claims();
        forged["sub"] = json!("root");
        let tampered = format!("{}.{}.{}", parts[0], b64(&forged), parts[2]);
        // `alg: none`, and HS256 with the public key as the shared secret.
        let none = format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "JWT", "kid": "rsa-1"})),
            b64(&claims())
        );
        let public = std::fs::read(fixture("rs256.pub.pem")).unwrap();
        let mut hs = Header::new(Algorithm::HS256);
        hs.kid = Some("rsa-1".into());
        let confused = encode(&hs, &claims(), &EncodingKey::from_secret(&public)).unwrap();
        let cases = [
            (
                with(json!({"exp": now() - 3600, "nbf": now() - 7200})),
                "expired",
            ),
            (with(json!({"nbf": now() + 3600})), "not_yet_valid"),
            (with(json!({"iss": "https://evil.example"})), "wrong_issuer"),
            (with(json!({"aud": "another-service"})), "wrong_audience"),
            (tampered, "bad_signature"),
            (none, "malformed_token"),
            (confused, "bad_algorithm"),
            (
                sign(Algorithm::RS256, "rsa-9", "rs256.pem", &claims()),
                "unknown_kid",
            ),
            (with(json!({"sub": "a b/../c"})), "bad_claims"),
            (with(json!({"groups": "finance"})), "bad_claims"),
            (format!("eyJ{}", "a".repeat(100 * 1024)), "token_too_large"),
            ("eyJhbGciOi.x.y".to_string(), "malformed_token"),
        ];
        for (token, code) in cases {
            let e = v.verify(&token).await.unwrap_err();
            assert_eq!(e.code(), code, "{e}");
        }
        // `alg: none` is refused as malformed by the header parser or as a
        // bad algorithm, never accepted; both are 401.
        assert!(v.verify(&good).await.is_ok());
    }

    #[tokio::test]
    async fn an_unknown_kid_reads_the_jwks_again_at_most_once_a_minute() {
        let dir = tempfile::tempdir().unwrap();
        let v = verifier(dir.path(), "jwks.json");
        let first = sign(Algorithm::RS256, "rsa-1", "rs256.pem", &claims());
        let rotated = sign(Algorithm::RS256, "rsa-2", "rs256-2.pem", &claims());
        assert!(v.verify(&first).await.is_ok());
        // The issuer publishes a new key.
        std::fs::copy(fixture("jwks-rotated.json"), dir.path().join("jwks.json")).unwrap();
        // Read less than a minute ago: not read again.
        assert_eq!(v.verify(&rotated).await.unwrap_err().code(), "unknown_kid");
        // A minute later, the unknown kid reads it again.
        v.keys.lock().unwrap().read_at =
            Some(Instant::now() - RELOAD_AFTER - Duration::from_secs(1));
        assert!(v.verify(&rotated).await.is_ok());
        assert!(v.verify(&first).await.is_ok());
    }

    #[tokio::test]
    async fn the_jwks_comes_from_a_url_and_a_failing_one_keeps_the_keys() {
        use wiremock::matchers::{method, path};
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        let jwks = std::fs::read_to_string(fixture("jwks.json")).unwrap();
        Mock::given(method("GET"))
            .and(path("/jwks.json"))
            .respond_with(ResponseTemplate::new(200).set_body_string(jwks))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server)
            .await;
        let v = JwtVerifier::new(&JwtConfig {
            issuer: "https://id.example".into(),
            audience: "grace".into(),
            jwks_url: format!("{}/jwks.json", server.uri()),
            ..JwtConfig::default()
        })
        .unwrap();
        let token = sign(Algorithm::ES256, "ec-1", "es256.pem", &claims());
        assert_eq!(v.verify(&token).await.unwrap().name, "ann");
        // The server fails now: an unknown kid a minute later finds it
        // down, and the keys read before still verify.
        v.keys.lock().unwrap().read_at =
            Some(Instant::now() - RELOAD_AFTER - Duration::from_secs(1));
        let unknown = sign(Algorithm::RS256, "rsa-9", "rs256.pem", &claims());
        assert_eq!(v.verify(&unknown).await.unwrap_err().code(), "unknown_kid");
        assert!(v.verify(&token).await.is_ok());
    }

    #[test]
    fn only_three_part_tokens_starting_as_json_are_taken_for_jwts() {
        assert!(looks_like_jwt("eyJhbGc.eyJzdWI.sig"));
        assert!(!looks_like_jwt("gk_abc"));
        assert!(!looks_like_jwt("eyJ.only-two"));
    }
}
