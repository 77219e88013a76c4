//! Password hashing (argon2id, 19 MiB and tens of milliseconds a hash) off
//! the async runtime and behind a bound: at most one hash per core runs at a
//! time, a few more may wait, and past that a request is answered `503` at
//! once instead of queueing memory and threads without end. Sign-in,
//! sign-up and machine passwords all go through one [`Hashing`].
//!
//! ```
//! use kite_bin::api::hashing::Hashing;
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let hashing = Hashing::new(1, 1);
//! let hash = hashing.hash("correct horse".into()).await.unwrap();
//! assert!(hash.starts_with("$argon2id$"));
//! # })
//! ```

use super::error::{ApiError, ApiResult};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The bounded pool password work runs on.
#[derive(Debug)]
pub struct Hashing {
    running: Arc<Semaphore>,
    admitted: Arc<Semaphore>,
    waits: Mutex<QueueWait>,
}

/// How long admitted work waited for a worker, since the pool was made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueWait {
    /// Work that got a worker.
    pub started: u64,
    /// The waits added up.
    pub total: Duration,
    /// The longest wait.
    pub longest: Duration,
}

impl QueueWait {
    /// The mean wait; zero before any work.
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.started) {
            Ok(0) | Err(_) => Duration::ZERO,
            Ok(started) => self.total / started,
        }
    }
}

/// The answer when the pool is full.
const BUSY: &str = "the server is busy checking passwords; try again in a few seconds";

impl Hashing {
    /// At most `workers` hashes at a time, and `waiting` more queued.
    pub fn new(workers: usize, waiting: usize) -> Self {
        let workers = workers.max(1);
        Self {
            running: Arc::new(Semaphore::new(workers)),
            admitted: Arc::new(Semaphore::new(workers + waiting)),
            waits: Mutex::new(QueueWait::default()),
        }
    }

    /// One hash per core of this machine, and four per core waiting.
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self::new(cores, 4 * cores)
    }

    /// Runs `work` on a blocking thread once a worker is free; `503` at once when the queue is full.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
        let Ok(admitted) = self.admitted.clone().try_acquire_owned() else {
            tracing::warn!("the password hashing queue is full; refusing a request");
            return Err(ApiError::busy(BUSY, 2));
        };
        let queued = Instant::now();
        let running =
            self.running.clone().acquire_owned().await.map_err(|error| ApiError::internal("waiting to hash", error))?;
        let waited = queued.elapsed();
        tracing::debug!(waited_ms = waited.as_millis(), "password work got a worker");
        if let Ok(mut waits) = self.waits.lock() {
            waits.started += 1;
            waits.total += waited;
            waits.longest = waits.longest.max(waited);
        }
        tokio::task::spawn_blocking(move || {
            let result = work();
            drop((running, admitted));
            result
        })
        .await
        .map_err(|error| ApiError::internal("hashing a password", error))
    }

    /// How long work has waited for a worker so far.
    pub fn queue_wait(&self) -> QueueWait {
        self.waits.lock().map(|waits| *waits).unwrap_or_default()
    }

    /// The argon2id hash of `password`.
    pub async fn hash(&self, password: String) -> ApiResult<String> {
        self.run(move || kite_ssh::password::hash(&password))
            .await?
            .map_err(|error| ApiError::internal("hashing a password", error))
    }

    /// The SHA-512-crypt hash (`$6$`, a random salt, 5000 rounds) of a
    /// machine password, which the guest's console login (`crypt(3)`) can
    /// check; an argon2id hash only the gateway can.
    ///
    /// The salt is 12 random bytes, 16 characters once encoded: SHA-crypt
    /// reads at most 16, and glibc writes back only those, so a longer salt
    /// (sha-crypt's own default is 22 characters) gives a hash that
    /// `crypt(3)` computes alike but `pam_unix` compares unequal.
    pub async fn console_hash(&self, password: String) -> ApiResult<String> {
        use rand::RngExt as _;
        use sha_crypt::{PasswordHasher, ShaCrypt};
        let mut salt = [0u8; 12];
        rand::rng().fill(&mut salt);
        self.run(move || {
            ShaCrypt::default()
                .hash_password_with_salt(password.as_bytes(), &salt)
                .map(|hash| hash.as_str().to_string())
        })
        .await?
        .map_err(|error| ApiError::internal("hashing a console password", error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[tokio::test]
    async fn a_full_queue_is_refused_at_once_and_a_freed_place_is_used_again() {
        let hashing = Arc::new(Hashing::new(1, 1));
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let first = tokio::spawn({
            let hashing = hashing.clone();
            async move { hashing.run(move || hold.recv().is_ok()).await }
        });
        let second = tokio::spawn({
            let hashing = hashing.clone();
            async move { hashing.run(|| 2).await }
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while hashing.admitted.available_permits() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let started = Instant::now();
        let refused = hashing.run(|| 3).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(500), "refused at once");
        assert_eq!(refused.status(), axum::http::StatusCode::SERVICE_UNAVAILABLE);
        assert!(refused.message().contains("busy"), "{}", refused.message());
        release.send(()).unwrap();
        assert!(first.await.unwrap().unwrap());
        assert_eq!(second.await.unwrap().unwrap(), 2);
        assert_eq!(hashing.run(|| 4).await.unwrap(), 4);
        let waits = hashing.queue_wait();
        assert_eq!(waits.started, 3, "three ran: {waits:?}");
        assert!(waits.longest > Duration::ZERO && waits.longest >= waits.mean(), "the second waited: {waits:?}");
    }
}
