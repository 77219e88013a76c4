//! How long a store keeps what it wrote, and how much: whole days go,
//! oldest first, once they are older than the age limit or while the store
//! is over its size limit. The current day (UTC) is never removed: its
//! files may still be written to. [`doomed`] decides from each day's size,
//! so the filesystem store and the S3 store prune alike.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The store's limits; `None` is no limit. [`Retention::default`] keeps
/// everything; the `with_*` methods set the limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// Days older than this go.
    pub max_age: Option<Duration>,
    /// While the store holds more bytes than this, its oldest day goes.
    pub max_bytes: Option<u64>,
}

impl Retention {
    /// This retention with days older than `max_age` going (`None`: no age limit).
    #[must_use]
    pub fn with_max_age(mut self, max_age: Option<Duration>) -> Self {
        self.max_age = max_age;
        self
    }

    /// This retention with the oldest days going while the store holds
    /// more than `max_bytes` (`None`: no size limit).
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: Option<u64>) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// What one pass removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pruned {
    /// The days removed, oldest first (`YYYY-MM-DD`).
    pub days: Vec<String>,
    /// The bytes they held.
    pub bytes: u64,
}

/// One day's files in the store: its audit file and its recordings folder.
struct Day {
    name: String,
    paths: Vec<PathBuf>,
    bytes: u64,
}

/// Removes what `retention` no longer allows from the store under `dir`,
/// `today` being the current day (`YYYY-MM-DD`, UTC).
pub(crate) fn prune(dir: &Path, retention: Retention, today: &str) -> std::io::Result<Pruned> {
    let days = days(dir)?;
    let sizes: Vec<(String, u64)> = days.iter().map(|day| (day.name.clone(), day.bytes)).collect();
    let doomed = doomed(&sizes, retention, today);
    let mut pruned = Pruned::default();
    for day in days.into_iter().filter(|day| doomed.contains(&day.name)) {
        for path in &day.paths {
            let removed = if path.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
            match removed {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        pruned.bytes += day.bytes;
        pruned.days.push(day.name);
    }
    Ok(pruned)
}

/// The days that `retention` no longer allows, oldest first, from each
/// day's name (`YYYY-MM-DD`) and size in bytes, `today` being the current
/// day (UTC), which is never among them. `days` need not be sorted.
pub(crate) fn doomed(days: &[(String, u64)], retention: Retention, today: &str) -> Vec<String> {
    let mut days: Vec<&(String, u64)> = days.iter().collect();
    days.sort_by(|a, b| a.0.cmp(&b.0));
    let mut total: u64 = days.iter().map(|(_, bytes)| bytes).sum();
    let oldest_kept = retention.max_age.map(|age| day_before(today, age));
    let mut doomed = Vec::new();
    for (name, bytes) in days {
        if name.as_str() >= today {
            break;
        }
        let too_old = oldest_kept.as_deref().is_some_and(|oldest| name.as_str() < oldest);
        let too_big = retention.max_bytes.is_some_and(|max| total > max);
        if !(too_old || too_big) {
            continue;
        }
        total = total.saturating_sub(*bytes);
        doomed.push(name.clone());
    }
    doomed
}

/// The first day kept when days older than `age` go.
fn day_before(today: &str, age: Duration) -> String {
    let days = i64::try_from(age.as_secs() / 86_400).unwrap_or(i64::MAX);
    let Ok(today) = today.parse::<jiff::civil::Date>() else { return today.to_string() };
    today.checked_sub(jiff::Span::new().days(days)).map(|day| day.to_string()).unwrap_or_default()
}

/// The store's days, from the names of its files and folders.
fn days(dir: &Path) -> std::io::Result<Vec<Day>> {
    let mut days: std::collections::BTreeMap<String, Day> = std::collections::BTreeMap::new();
    let mut add = |name: &str, path: PathBuf| -> std::io::Result<()> {
        if name.parse::<jiff::civil::Date>().is_err() {
            return Ok(());
        }
        let bytes = size(&path)?;
        let day =
            days.entry(name.to_string()).or_insert_with(|| Day { name: name.to_string(), paths: vec![], bytes: 0 });
        day.paths.push(path);
        day.bytes += bytes;
        Ok(())
    };
    for (folder, suffix) in [("audit", ".jsonl"), ("recordings", "")] {
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else { continue };
        for entry in entries {
            let entry = entry?;
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str().and_then(|name| name.strip_suffix(suffix)) else { continue };
            add(name, entry.path())?;
        }
    }
    Ok(days.into_values().collect())
}

fn size(path: &Path) -> std::io::Result<u64> {
    let metadata = std::fs::symlink_metadata(path)?;
    if !metadata.is_dir() {
        return Ok(metadata.len());
    }
    let mut total = 0;
    for entry in std::fs::read_dir(path)? {
        total += size(&entry?.path())?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_day(dir: &Path, day: &str, bytes: usize) {
        std::fs::create_dir_all(dir.join("audit")).unwrap();
        std::fs::write(dir.join("audit").join(format!("{day}.jsonl")), vec![b'a'; bytes]).unwrap();
        let casts = dir.join("recordings").join(day);
        std::fs::create_dir_all(&casts).unwrap();
        std::fs::write(casts.join("c-0.cast"), vec![b'o'; bytes]).unwrap();
    }

    fn kept(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.join("recordings"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn days_older_than_the_age_go_with_their_recordings() {
        let dir = tempfile::tempdir().unwrap();
        for day in ["2026-11-01", "2026-11-28", "2026-12-04", "2026-12-05"] {
            a_day(dir.path(), day, 10);
        }
        std::fs::write(dir.path().join("audit").join("notes.txt"), "not a day").unwrap();
        let retention = Retention { max_age: Some(Duration::from_secs(7 * 86_400)), max_bytes: None };
        let pruned = prune(dir.path(), retention, "2026-12-05").unwrap();
        assert_eq!(pruned, Pruned { days: vec!["2026-11-01".into()], bytes: 20 });
        assert_eq!(kept(dir.path()), ["2026-11-28", "2026-12-04", "2026-12-05"]);
        assert!(!dir.path().join("audit/2026-11-01.jsonl").exists());
        assert!(dir.path().join("audit/notes.txt").exists(), "what is not a day's is left alone");
    }

    #[test]
    fn over_the_size_the_oldest_days_go_but_never_today() {
        let dir = tempfile::tempdir().unwrap();
        for day in ["2026-12-01", "2026-12-02", "2026-12-03", "2026-12-05"] {
            a_day(dir.path(), day, 100);
        }
        let retention = Retention { max_age: None, max_bytes: Some(450) };
        let pruned = prune(dir.path(), retention, "2026-12-05").unwrap();
        assert_eq!(pruned.days, ["2026-12-01", "2026-12-02"], "800 bytes down to 400");
        let retention = Retention { max_age: None, max_bytes: Some(1) };
        prune(dir.path(), retention, "2026-12-05").unwrap();
        assert_eq!(kept(dir.path()), ["2026-12-05"], "today stays even over the limit");
    }
}
