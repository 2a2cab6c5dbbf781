//! Password hashing with argon2id at OWASP's parameters (19 MiB, 2 passes, 1 lane).
//! Hashing costs tens of milliseconds of CPU on purpose, so it runs on the
//! blocking pool, never on the async workers.
//!
//! Each hash or check holds 19 MiB and a core until it ends, so one process
//! runs at most [`checks_at_once`] of them: each needs a [`CheckSlot`], which
//! its blocking task keeps until it returns (a client that hangs up does not
//! free it early). A request that waits [`SLOT_WAIT`] without one is answered
//! 503 `SERVICE_UNAVAILABLE` with `Retry-After`, having checked nothing.
//!
//! A slot also carries the 19 MiB the algorithm works in, reused from one
//! check to the next: the memory of password checks is at most
//! `checks_at_once() x 19 MiB`. Measured on a backend process with 32 wrong
//! sign-ins sent at once (`tests/faults/tests/sign_in_flood.rs`): with
//! every check allocating its own memory on the blocking pool, glibc kept what
//! each thread had freed and the process grew by about 400 MiB, and without
//! the bound every request would hold its 19 MiB at the same moment. Memory no
//! check has used for [`IDLE_MEMORY_KEPT`] goes back to the system (a thread of
//! its own frees it; an allocation this size is a mapping of its own, unmapped
//! when freed), so a burst of sign-ins does not leave the process
//! `checks_at_once() x 19 MiB` larger for good.

use crate::error::ApiError;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{
    Decimal, Ident, Output, ParamsString, PasswordHash, PasswordHasher, PasswordVerifier, Salt,
    SaltString,
};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use secrecy::{ExposeSecret, SecretString};
use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Shortest password a shopper may be given: NIST SP 800-63B-4's minimum for
/// a password that is the only factor, as a shopper's is.
pub const MIN_PASSWORD_CHARS: usize = 15;
/// Longest password accepted (hashing cost grows with it).
pub const MAX_PASSWORD_CHARS: usize = 256;
/// The zxcvbn score a new password needs: its top one, more than 10^10
/// guesses even with its lists of common and breached passwords, words and
/// names, the email and the product's name to guess from ([`check_new`]).
/// Score 3 (10^8) let through `P@ssw0rd2024!!!!` and the email's local part
/// with `1234` added; a passphrase of three uncommon words scores 4.
const MIN_SCORE: zxcvbn::Score = zxcvbn::Score::Four;
/// The product's name, in the spellings a password might be built on.
const PRODUCT_WORDS: [&str; 4] = [
    "exactly-once checkout",
    "exactly-once",
    "exactlyonce",
    "checkout",
];

/// Longest a hash or check waits for a [`CheckSlot`] before giving up.
pub const SLOT_WAIT: Duration = Duration::from_secs(10);

/// OWASP Password Storage Cheat Sheet: m=19456 KiB, t=2, p=1.
fn params() -> Params {
    Params::new(19_456, 2, 1, None).unwrap_or_default()
}

/// Most password hashes and checks this process runs at once: its cores, at
/// most 4 (76 MiB of argon2 memory).
pub fn checks_at_once() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

fn slots() -> Arc<Semaphore> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    Arc::clone(SLOTS.get_or_init(|| Arc::new(Semaphore::new(checks_at_once()))))
}

/// How long the working memory of a slot is kept for the next check once no
/// check uses it; then it goes back to the system.
pub const IDLE_MEMORY_KEPT: Duration = Duration::from_secs(5);

/// The working memory of the slots not in use (at most [`checks_at_once`]),
/// each with when it was last given back: the oldest first.
type IdleMemory = Vec<(Box<[Block]>, Instant)>;

/// The idle working memory, locked.
fn idle_memory() -> std::sync::MutexGuard<'static, IdleMemory> {
    static IDLE: OnceLock<Mutex<IdleMemory>> = OnceLock::new();
    IDLE.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Frees the idle working memory given back before `now - IDLE_MEMORY_KEPT`.
fn release_idle_memory(now: Instant) {
    let Some(before) = now.checked_sub(IDLE_MEMORY_KEPT) else {
        return;
    };
    let released = take_idle_since(&mut idle_memory(), before);
    // Freed outside the lock.
    drop(released);
}

/// Takes out of `idle` (oldest first) what was given back before `before`.
fn take_idle_since<T>(idle: &mut Vec<(T, Instant)>, before: Instant) -> Vec<T> {
    let kept_from = idle
        .iter()
        .position(|(_, since)| *since >= before)
        .unwrap_or(idle.len());
    idle.drain(..kept_from).map(|(memory, _)| memory).collect()
}

/// Starts, once per process, the thread that frees idle working memory (a
/// thread rather than a task: it outlives any one tokio runtime).
fn start_releasing_idle_memory() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let started = std::thread::Builder::new()
            .name("password-memory".to_owned())
            .spawn(|| {
                loop {
                    std::thread::sleep(IDLE_MEMORY_KEPT / 2);
                    release_idle_memory(Instant::now());
                }
            });
        if let Err(err) = started {
            tracing::warn!(error = %err, "cannot start the thread that frees idle password-check memory; it stays allocated");
        }
    });
}

/// The right to run one password hash or check now ([`slot`]), with the
/// memory to run it in; both go back when it is dropped.
pub struct CheckSlot {
    memory: Box<[Block]>,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for CheckSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckSlot")
            .field("memory_blocks", &self.memory.len())
            .finish()
    }
}

impl Drop for CheckSlot {
    fn drop(&mut self) {
        let memory = std::mem::take(&mut self.memory);
        idle_memory().push((memory, Instant::now()));
    }
}

/// A slot for one password hash or check, waiting (first come, first served)
/// up to [`SLOT_WAIT`]; `Err(PasswordChecksBusy)` after that.
pub async fn slot() -> Result<CheckSlot, ApiError> {
    let permit = match tokio::time::timeout(SLOT_WAIT, slots().acquire_owned()).await {
        Ok(Ok(permit)) => permit,
        Ok(Err(closed)) => return Err(ApiError::internal(closed)),
        Err(_) => {
            tracing::warn!(
                at_once = checks_at_once(),
                waited = ?SLOT_WAIT,
                "every password-check slot stayed taken: a flood of sign-ins? answered 503"
            );
            return Err(ApiError::PasswordChecksBusy);
        }
    };
    // The most recently used memory; made anew when none is idle (it is
    // reused while checks keep coming, freed once they stop).
    let idle = idle_memory().pop().map(|(memory, _)| memory);
    start_releasing_idle_memory();
    let memory =
        idle.unwrap_or_else(|| vec![Block::default(); params().block_count()].into_boxed_slice());
    Ok(CheckSlot {
        memory,
        _permit: permit,
    })
}

/// argon2 working in a slot's memory. Verifying goes through the library's
/// `PasswordVerifier` (its constant-time comparison of the outputs).
struct InSlot<'m> {
    memory: RefCell<&'m mut [Block]>,
}

impl<'m> InSlot<'m> {
    fn new(slot: &'m mut CheckSlot) -> Self {
        Self {
            memory: RefCell::new(&mut slot.memory),
        }
    }
}

impl PasswordHasher for InSlot<'_> {
    type Params = Params;

    fn hash_password<'a>(
        &self,
        password: &[u8],
        salt: impl Into<Salt<'a>>,
    ) -> argon2::password_hash::Result<PasswordHash<'a>> {
        self.hash_password_customized(
            password,
            Some(Algorithm::Argon2id.ident()),
            Some(Version::V0x13.into()),
            params(),
            salt,
        )
    }

    fn hash_password_customized<'a>(
        &self,
        password: &[u8],
        algorithm: Option<Ident<'a>>,
        version: Option<Decimal>,
        params: Params,
        salt: impl Into<Salt<'a>>,
    ) -> argon2::password_hash::Result<PasswordHash<'a>> {
        let algorithm = algorithm
            .map(Algorithm::try_from)
            .transpose()?
            .unwrap_or_default();
        let version = version
            .map(Version::try_from)
            .transpose()?
            .unwrap_or_default();
        let salt = salt.into();
        let mut salt_buffer = [0_u8; 64];
        let salt_bytes = salt.decode_b64(&mut salt_buffer)?;
        let output_len = params.output_len().unwrap_or(Params::DEFAULT_OUTPUT_LEN);
        let argon2 = Argon2::new(algorithm, version, params.clone());
        let mut memory = self.memory.borrow_mut();
        // A hash made with more memory than ours gets memory of its own.
        let mut larger = Vec::new();
        let blocks: &mut [Block] = if params.block_count() <= memory.len() {
            &mut memory[..]
        } else {
            larger.resize(params.block_count(), Block::default());
            &mut larger
        };
        let output = Output::init_with(output_len, |out| {
            Ok(argon2.hash_password_into_with_memory(password, salt_bytes, out, &mut *blocks)?)
        })?;
        Ok(PasswordHash {
            algorithm: algorithm.ident(),
            version: Some(version.into()),
            params: ParamsString::try_from(&params)?,
            salt: Some(salt),
            hash: Some(output),
        })
    }
}

/// The argon2id PHC string of `password`, computed in a [`slot`] it waits for.
pub async fn hash(password: SecretString) -> Result<String, ApiError> {
    let slot = slot().await?;
    tokio::task::spawn_blocking(move || {
        let mut slot = slot;
        let salt = SaltString::generate(&mut OsRng);
        InSlot::new(&mut slot)
            .hash_password(password.expose_secret().as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .map_err(|err| ApiError::internal(anyhow::anyhow!("argon2: {err}")))
    })
    .await
    .map_err(ApiError::internal)?
}

/// True when `password` matches `stored`, checked in `slot`. With no stored
/// hash (unknown email) it verifies against a fixed hash anyway, so both
/// answers take as long.
pub async fn verify(
    slot: CheckSlot,
    password: SecretString,
    stored: Option<String>,
) -> Result<bool, ApiError> {
    tokio::task::spawn_blocking(move || {
        let mut slot = slot;
        let argon2 = InSlot::new(&mut slot);
        let known = stored.is_some();
        let text = stored.unwrap_or_else(|| dummy_hash(&argon2).to_owned());
        let Ok(parsed) = PasswordHash::new(&text) else {
            return false;
        };
        let matches = argon2
            .verify_password(password.expose_secret().as_bytes(), &parsed)
            .is_ok();
        known && matches
    })
    .await
    .map_err(ApiError::internal)
}

/// A hash of a random password, made once per process (in the first
/// caller's slot).
fn dummy_hash(argon2: &InSlot<'_>) -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let salt = SaltString::generate(&mut OsRng);
        argon2
            .hash_password(salt.as_str().as_bytes(), &salt)
            .map(|hash| hash.to_string())
            .unwrap_or_default()
    })
}

/// Checks a new password as NIST SP 800-63B asks: any characters, no
/// composition rules, [`MIN_PASSWORD_CHARS`] to [`MAX_PASSWORD_CHARS`] long,
/// and not one an attacker tries early: zxcvbn (Dropbox's estimator, with the
/// lists of common and breached passwords, words and names its crate ships)
/// must find it needs more than 10^10 guesses (`MIN_SCORE`) when it may also
/// guess from `email` and the product's name. That refuses the top breached
/// passwords and their variants (`password1234`), repeats and sequences
/// (twelve spaces, `aaaaaaaaaaaa`, `123456789012`), and the email or the
/// product's name with a little added. The message says why, never the password.
pub fn check_new(password: &str, email: &str) -> Result<(), ApiError> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(ApiError::BadRequest(format!(
            "password must be at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(ApiError::BadRequest(format!(
            "password must be at most {MAX_PASSWORD_CHARS} characters"
        )));
    }
    let context = context_words(email);
    let context: Vec<&str> = context.iter().map(String::as_str).collect();
    let estimate = zxcvbn::zxcvbn(password, &context);
    if estimate.score() < MIN_SCORE {
        let warning = estimate
            .feedback()
            .and_then(zxcvbn::feedback::Feedback::warning)
            .map(|warning| format!(" ({warning})"))
            .unwrap_or_default();
        return Err(ApiError::BadRequest(format!(
            "password is too easy to guess{warning}: it must not be a common or breached \
             password, a repeat or a sequence, or be made from the email or the product's \
             name; a few uncommon words make a good one"
        )));
    }
    Ok(())
}

/// What a password must not be built on besides zxcvbn's own lists: the
/// email, its local part and domain, each run of 3 or more letters or digits
/// in it, and the product's name.
fn context_words(email: &str) -> Vec<String> {
    let email = email.trim();
    let mut words: Vec<String> = PRODUCT_WORDS.iter().map(|&word| word.to_owned()).collect();
    words.push(email.to_owned());
    if let Some((local, domain)) = email.rsplit_once('@') {
        words.extend([local.to_owned(), domain.to_owned()]);
    }
    words.extend(
        email
            .split(|c: char| !c.is_alphanumeric())
            .filter(|run| run.chars().count() >= 3)
            .map(str::to_owned),
    );
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_is_argon2id_at_owasp_parameters_and_verifies_only_its_password() {
        let take = || async { slot().await.expect("a slot") };
        let hashed = hash(SecretString::from("correct horse battery"))
            .await
            .expect("hashes");
        assert!(
            hashed.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hashed}"
        );
        let check = |password: &'static str, stored: Option<String>| async move {
            verify(take().await, SecretString::from(password), stored)
                .await
                .expect("verifies")
        };
        assert!(check("correct horse battery", Some(hashed.clone())).await);
        assert!(!check("correct horse batterY", Some(hashed.clone())).await);
        assert!(!check("anything", None).await);
    }

    #[test]
    fn idle_memory_goes_back_oldest_first_once_unused_for_the_time_kept() {
        let start = Instant::now();
        let at = |secs| start + Duration::from_secs(secs);
        let mut idle = vec![("first", at(0)), ("second", at(3)), ("third", at(4))];
        // Nothing is older than the time kept.
        assert!(take_idle_since(&mut idle, at(0)).is_empty());
        assert_eq!(idle.len(), 3);
        // Given back before 4 s: the first two.
        assert_eq!(take_idle_since(&mut idle, at(4)), vec!["first", "second"]);
        assert_eq!(idle, vec![("third", at(4))]);
        assert_eq!(take_idle_since(&mut idle, at(60)), vec!["third"]);
        assert!(idle.is_empty());
    }

    #[tokio::test]
    async fn hashes_made_by_the_library_itself_verify_in_a_slot_and_slots_hand_their_memory_on() {
        // A hash as argon2's own allocating code makes it, with other
        // parameters (more memory than a slot holds): the slot's hasher
        // checks it the same way.
        let salt = SaltString::generate(&mut OsRng);
        let heavier = Params::new(24_576, 1, 1, None).expect("params");
        let library = Argon2::new(Algorithm::Argon2id, Version::V0x13, heavier)
            .hash_password(b"a password of the past", &salt)
            .expect("hashes")
            .to_string();
        let ours = verify(
            slot().await.expect("a slot"),
            SecretString::from("a password of the past"),
            Some(library.clone()),
        );
        assert!(ours.await.expect("verifies"));
        let wrong = verify(
            slot().await.expect("a slot"),
            SecretString::from("a password of the pasT"),
            Some(library),
        );
        assert!(!wrong.await.expect("verifies"));
        // Ours verify with the library's own verifier.
        let ours = hash(SecretString::from("made in a slot"))
            .await
            .expect("hashes");
        let parsed = PasswordHash::new(&ours).expect("a PHC string");
        assert!(
            Argon2::default()
                .verify_password(b"made in a slot", &parsed)
                .is_ok()
        );
        // Each slot's memory goes back for the next one: never more sets of
        // it than slots.
        let held: Vec<CheckSlot> = futures::future::join_all(
            (0..checks_at_once()).map(|_| async { slot().await.expect("a slot") }),
        )
        .await;
        drop(held);
        let idle = idle_memory().len();
        assert!(
            (1..=checks_at_once()).contains(&idle),
            "{idle} sets of working memory for {} slots",
            checks_at_once()
        );
    }

    const EMAIL: &str = "kim.lindqvist@shop.test";

    fn refusal(password: &str) -> Option<String> {
        match check_new(password, EMAIL) {
            Ok(()) => None,
            Err(ApiError::BadRequest(message)) => Some(message),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn new_passwords_must_have_a_sensible_length() {
        let short = refusal("fourteen chars").expect("refused");
        assert!(short.contains("at least 15 characters"), "{short}");
        assert!(refusal(&"x".repeat(MAX_PASSWORD_CHARS + 1)).is_some());
        // Any characters count: spaces, letters of any script, no classes asked for.
        assert_eq!(refusal("tundra velvet ossify"), None);
        assert_eq!(refusal("грушевый сад у моря"), None);
    }

    #[test]
    fn common_repeated_and_sequential_passwords_are_refused_saying_why() {
        for password in [
            " ".repeat(15),
            "a".repeat(15),
            "password12345678".to_owned(),
            "passwordpassword".to_owned(),
            "123456789012345".to_owned(),
            "qwertyuiopasdfgh".to_owned(),
            "abcdefghijklmnop".to_owned(),
            "iloveyou1234567".to_owned(),
            "P@ssw0rd2024!!!!".to_owned(),
        ] {
            let message = refusal(&password).unwrap_or_else(|| panic!("{password:?} accepted"));
            assert!(
                message.starts_with("password is too easy to guess"),
                "{message}"
            );
            assert!(
                !message.contains(&password),
                "the message never shows the password"
            );
        }
    }

    #[test]
    fn passwords_made_from_the_email_or_the_product_name_are_refused() {
        for password in [
            EMAIL,
            "KIM.LINDQVIST@SHOP.TEST",
            "kim.lindqvist2024",
            "lindqvist-lindqvist",
            "kimlindqvist1234",
            "tset.pohs@tsivqdnil.mik",
            "exactly-once checkout",
            "Checkout-Checkout-1",
            "exactlyonce12345",
        ] {
            assert!(refusal(password).is_some(), "{password:?} accepted");
        }
    }

    #[test]
    fn the_test_suites_and_tools_passwords_pass() {
        // Passwords the integration tests, storm and schemathesis give new shoppers.
        for password in [
            "a-test-password-long-enough",
            "logs-test-password-never-logged",
            "schemathesis-password",
            "1f0c2b9a7e6d4c3b8a5f0e1d2c3b4a59",
        ] {
            assert_eq!(refusal(password), None, "{password:?}");
        }
    }
}
