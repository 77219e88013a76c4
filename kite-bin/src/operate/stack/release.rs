//! Release files read from a directory (`--from DIR`): each component's
//! version, found in the files themselves (the tag of its operator's
//! image), and each file's SHA-256 checked against this build's pins.

use super::Upstream;
use crate::operate::plan::Check;
use kite_core::api::ReleaseFile;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

/// One component's release, as read from the directory.
#[derive(Clone, Debug)]
pub struct Release {
    /// What Kite knows of the component.
    pub upstream: Upstream,
    /// Its version, from its operator's image.
    pub version: String,
    /// Its files, the operator's first.
    pub files: Vec<LoadedFile>,
}

/// One release file.
#[derive(Clone, Debug)]
pub struct LoadedFile {
    /// Its name and hash, as recorded.
    pub record: ReleaseFile,
    /// Its objects, in the file's order.
    pub objects: Vec<Value>,
}

impl Release {
    /// What is recorded of it in the installation.
    pub fn records(&self) -> Vec<ReleaseFile> {
        self.files.iter().map(|f| f.record.clone()).collect()
    }
}

/// The image tag of `workload`'s first container.
pub fn image_tag(workload: &Value) -> Option<String> {
    let image = workload["spec"]["template"]["spec"]["containers"][0]["image"].as_str()?;
    let (_, tag) = image.rsplit_once(':')?;
    (!tag.contains('/')).then(|| tag.to_string())
}

/// Reads each component's release files from `dir`, with a check per
/// component: its version and whether its files match this build's pins.
/// A component whose files are missing or unreadable, or whose hash
/// differs from a pin, fails; one without a pin fails unless `allow_unpinned`.
pub fn load(dir: &Path, allow_unpinned: bool) -> (Vec<Release>, Vec<Check>) {
    let mut releases = Vec::new();
    let mut checks = Vec::new();
    for upstream in Upstream::all() {
        match load_one(dir, upstream, allow_unpinned) {
            Ok((release, check)) => {
                checks.push(check);
                releases.push(release);
            }
            Err(check) => checks.push(*check),
        }
    }
    (releases, checks)
}

/// The check of `upstream`'s release.
fn title(upstream: Upstream) -> String {
    format!("{} release", upstream.name.title())
}

/// A failed check of `upstream`'s release.
fn fail(upstream: Upstream, observed: String, fix: String) -> Box<Check> {
    Box::new(Check::fail(title(upstream), observed, fix))
}

/// Reads `upstream`'s release files from `dir`, finds its version and checks them against the pins.
fn load_one(dir: &Path, upstream: Upstream, allow_unpinned: bool) -> Result<(Release, Check), Box<Check>> {
    let mut files = Vec::new();
    for file in upstream.files() {
        files.push(read_file(dir, upstream, file)?);
    }
    let version = version(upstream, &files[0])?;
    let unpinned = check_pins(upstream, &version, &mut files)?;
    let what = format!("{} {version}", upstream.name.title());
    let check = pins_check(upstream, &what, &unpinned, allow_unpinned)?;
    Ok((Release { upstream, version, files }, check))
}

/// Reads one release file: its objects, and its SHA-256 (not yet compared with a pin).
fn read_file(dir: &Path, upstream: Upstream, file: &str) -> Result<LoadedFile, Box<Check>> {
    let path = dir.join(file);
    let bytes = std::fs::read(&path).map_err(|error| {
        fail(
            upstream,
            format!("cannot read {}: {error}", path.display()),
            format!("put {}'s release file there: {}", upstream.name.title(), upstream.url(upstream.recommended, file)),
        )
    })?;
    let text = String::from_utf8(bytes.clone()).map_err(|_| {
        fail(upstream, format!("{} is not UTF-8 text", path.display()), "use the release file as published".into())
    })?;
    let objects: Vec<Value> = serde_saphyr::from_multiple::<Value>(&text)
        .map_err(|error| {
            fail(
                upstream,
                format!("{} is not YAML: {error}", path.display()),
                "use the release file as published".into(),
            )
        })?
        .into_iter()
        .filter(|o| o.is_object())
        .collect();
    let sha256: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    Ok(LoadedFile { record: ReleaseFile { file: file.into(), sha256, pinned: false }, objects })
}

/// The version of the release: the tag of its operator's image in `operator`, its operator's file.
fn version(upstream: Upstream, operator: &LoadedFile) -> Result<String, Box<Check>> {
    let (kind, name) = upstream.workload;
    operator.objects.iter().find(|o| o["kind"] == kind && o["metadata"]["name"] == name).and_then(image_tag).ok_or_else(
        || {
            fail(
                upstream,
                format!(
                    "{} has no {kind} {name} with a tagged image, so its version is not known",
                    upstream.operator_file
                ),
                format!(
                    "is it {}'s release file? {}",
                    upstream.name.title(),
                    upstream.url(upstream.recommended, upstream.operator_file)
                ),
            )
        },
    )
}

/// Marks each of `files` pinned when its hash is the pin of `version`; fails on a hash that differs
/// from its pin. The files this build pins nothing for, as `file sha256:…`.
fn check_pins(upstream: Upstream, version: &str, files: &mut [LoadedFile]) -> Result<Vec<String>, Box<Check>> {
    let mut unpinned = Vec::new();
    for file in files {
        match upstream.pin(version, &file.record.file) {
            Some(pin) if pin == file.record.sha256 => file.record.pinned = true,
            Some(pin) => {
                return Err(fail(
                    upstream,
                    format!(
                        "{} of {version} has SHA-256 {}, but {} publishes {pin}: the file was changed or is another release's",
                        file.record.file,
                        file.record.sha256,
                        upstream.name.title()
                    ),
                    format!("download it again: {}", upstream.url(version, &file.record.file)),
                ));
            }
            None => unpinned.push(format!("{} sha256:{}", file.record.file, file.record.sha256)),
        }
    }
    Ok(unpinned)
}

/// The release's check: every file pinned, or `unpinned` ones allowed (a warning) or refused.
fn pins_check(upstream: Upstream, what: &str, unpinned: &[String], allow_unpinned: bool) -> Result<Check, Box<Check>> {
    if unpinned.is_empty() {
        Ok(Check::ok(title(upstream), format!("{what}, every file's SHA-256 matches this build's pin")))
    } else if allow_unpinned {
        Ok(Check::warn(
            title(upstream),
            format!("{what}: this build pins no SHA-256 for it, so {} is recorded unverified", unpinned.join(", ")),
            "nothing, if you compared the hashes with the project's release yourself: --allow-unpinned asked for it",
        ))
    } else {
        Err(fail(
            upstream,
            format!("{what}: this build pins no SHA-256 for it ({})", unpinned.join(", ")),
            format!(
                "compare those hashes with {}'s release, then pass --allow-unpinned; or use a release this build pins ({} {})",
                upstream.name.title(),
                upstream.name.title(),
                upstream.recommended
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_tag_of_the_operator_image() {
        let workload = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"image": "quay.io/kubevirt/virt-operator:v1.9.0"}]}}}});
        assert_eq!(image_tag(&workload).as_deref(), Some("v1.9.0"));
        let untagged = serde_json::json!({"spec": {"template": {"spec": {"containers": [{"image": "localhost:5000/virt-operator"}]}}}});
        assert_eq!(image_tag(&untagged), None);
    }

    #[test]
    fn a_missing_directory_fails_each_component_naming_where_its_file_comes_from() {
        let (releases, checks) = load(Path::new("/nonexistent/kite-release"), true);
        assert!(releases.is_empty());
        assert_eq!(checks.len(), 3);
        assert!(checks.iter().all(|c| c.outcome == crate::operate::Outcome::Fail));
        assert!(
            checks[0].fix.as_deref().is_some_and(|f| f.contains("raw.githubusercontent.com/longhorn/longhorn/v1.11.3"))
        );
    }
}
