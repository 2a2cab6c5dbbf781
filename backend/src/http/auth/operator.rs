//! What an operator session must still match on every request: the admin
//! token it was obtained with (kept as a keyed fingerprint, never the token)
//! and its absolute lifetime from sign-in.

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// A keyed fingerprint of the admin token: HMAC-SHA256 keyed with the token
/// over a fixed label. An operator session keeps this, never the token, so its
/// row in PostgreSQL tells nothing a reader could sign in with; finding the
/// token from it is guessing the token (at least 32 characters, checked at
/// start). It ties the session to the token it was obtained with: rotate
/// `ADMIN_TOKEN` and the fingerprint no longer matches ([`OperatorSessions`]).
#[derive(Clone)]
pub struct AdminTokenFingerprint([u8; 32]);

impl AdminTokenFingerprint {
    /// What the HMAC is computed over: this use of the token and no other.
    const LABEL: &'static [u8] = b"exactly-once checkout: operator session v1";

    /// The fingerprint of `token`.
    pub fn of(token: &SecretString) -> Self {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(token.expose_secret().as_bytes())
            .expect("HMAC takes a key of any length");
        mac.update(Self::LABEL);
        Self(mac.finalize().into_bytes().into())
    }

    /// As kept in the session.
    pub(crate) fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// True when `kept` (hex, from a session) is this fingerprint; the bytes
    /// are compared in constant time.
    fn matches(&self, kept: &str) -> bool {
        hex::decode(kept).is_ok_and(|kept| bool::from(kept.as_slice().ct_eq(&self.0)))
    }
}

/// The fingerprint is derived from a secret: never in `Debug`.
impl std::fmt::Debug for AdminTokenFingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminTokenFingerprint([redacted])")
    }
}

/// What every operator session must still match, on every request: the admin
/// token configured now (the one it was obtained with, by fingerprint), and
/// its absolute lifetime from sign-in, beside the idle time all sessions have.
#[derive(Clone, Debug)]
pub struct OperatorSessions {
    /// The fingerprint of `ADMIN_TOKEN`; `None` when unset (no console).
    admin_token: Option<AdminTokenFingerprint>,
    /// How long after sign-in an operator session ends, however busy.
    lifetime: Duration,
}

impl OperatorSessions {
    /// Operator sessions obtained with `admin_token`, each living at most `lifetime`.
    pub fn new(admin_token: Option<&SecretString>, lifetime: Duration) -> Self {
        Self {
            admin_token: admin_token.map(AdminTokenFingerprint::of),
            lifetime,
        }
    }

    /// The fingerprint a new operator session keeps; `None` without `ADMIN_TOKEN`.
    pub fn fingerprint(&self) -> Option<&AdminTokenFingerprint> {
        self.admin_token.as_ref()
    }

    /// True when a session that keeps `fingerprint` and was signed in at
    /// `signed_in_at` (Unix seconds) is still an operator's at `now`: the admin
    /// token is the one it was obtained with, and its lifetime is not over. A
    /// session missing either (made before they were kept) is not.
    pub(crate) fn admits(
        &self,
        fingerprint: Option<&str>,
        signed_in_at: Option<i64>,
        now: i64,
    ) -> bool {
        let (Some(configured), Some(kept), Some(signed_in_at)) =
            (&self.admin_token, fingerprint, signed_in_at)
        else {
            return false;
        };
        let lifetime = i64::try_from(self.lifetime.as_secs()).unwrap_or(i64::MAX);
        configured.matches(kept) && now.saturating_sub(signed_in_at) < lifetime
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "an-admin-token-of-at-least-32-characters";
    const EIGHT_HOURS: Duration = Duration::from_secs(8 * 3600);

    fn sessions_of(token: Option<&str>) -> OperatorSessions {
        OperatorSessions::new(token.map(SecretString::from).as_ref(), EIGHT_HOURS)
    }

    fn kept(token: &str) -> String {
        AdminTokenFingerprint::of(&SecretString::from(token)).to_hex()
    }

    #[test]
    fn a_session_lives_only_with_the_admin_token_it_was_obtained_with() {
        let now = 1_000_000;
        let sessions = sessions_of(Some(TOKEN));
        assert!(sessions.admits(Some(&kept(TOKEN)), Some(now), now));
        let rotated = "another-admin-token-of-32-characters-or-more";
        assert!(!sessions.admits(Some(&kept(rotated)), Some(now), now));
        assert!(!sessions_of(None).admits(Some(&kept(TOKEN)), Some(now), now));
        // Made before fingerprints were kept, or not hex: not an operator's.
        assert!(!sessions.admits(None, Some(now), now));
        assert!(!sessions.admits(Some("not hex"), Some(now), now));
        assert!(!sessions.admits(Some(&kept(TOKEN)), None, now));
    }

    #[test]
    fn a_session_ends_at_its_lifetime_from_sign_in() {
        let sessions = sessions_of(Some(TOKEN));
        let signed_in = 1_000_000;
        let lifetime = 8 * 3600;
        assert!(sessions.admits(
            Some(&kept(TOKEN)),
            Some(signed_in),
            signed_in + lifetime - 1
        ));
        assert!(!sessions.admits(Some(&kept(TOKEN)), Some(signed_in), signed_in + lifetime));
    }

    #[test]
    fn the_fingerprint_is_keyed_by_the_token_and_never_shows_it() {
        let fingerprint = AdminTokenFingerprint::of(&SecretString::from(TOKEN));
        assert_eq!(fingerprint.to_hex().len(), 64);
        assert!(!fingerprint.to_hex().contains(TOKEN));
        assert_ne!(
            fingerprint.to_hex(),
            kept("another-admin-token-of-32-characters-or-more")
        );
        assert!(!format!("{fingerprint:?}").contains(&fingerprint.to_hex()));
        assert!(!format!("{:?}", sessions_of(Some(TOKEN))).contains(&fingerprint.to_hex()));
    }
}
