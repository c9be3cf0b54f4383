//! GRACE's per-user folder, where `scripts/setup` puts the models so that a
//! `grace` installed with `cargo install` finds them from any directory:
//! `$GRACE_HOME`, else the platform's data folder (`$XDG_DATA_HOME/grace`,
//! else `~/.local/share/grace`; on macOS `~/Library/Application
//! Support/grace`). It holds the same layout as the repository:
//! `models/minilm`, `models/libonnxruntime.so`, `models/reader`,
//! `models/e5`. When that folder has no `models/` and the system package
//! installed them ([`SYSTEM_HOME`]), those are used.

use std::path::{Path, PathBuf};

/// The variable that names GRACE's per-user folder.
pub const HOME_VAR: &str = "GRACE_HOME";

/// Where the Debian package puts the models (`packaging/debian`).
pub const SYSTEM_HOME: &str = "/usr/share/grace";

/// The folder the models are looked for in: [`grace_home`], or
/// [`SYSTEM_HOME`] when `GRACE_HOME` is not set, the per-user folder has
/// no `models/minilm` and the system one has.
pub fn models_home(vars: &[(String, String)]) -> Option<PathBuf> {
    // The default model: a folder holding only another one (e5) is not
    // a set of models to use.
    resolve_home(vars, &|p: &Path| p.join("models/minilm").is_dir())
}

fn resolve_home(vars: &[(String, String)], has_models: &dyn Fn(&Path) -> bool) -> Option<PathBuf> {
    let explicit = vars
        .iter()
        .rev()
        .any(|(k, v)| k == HOME_VAR && !v.is_empty());
    let home = grace_home(vars);
    match home {
        Some(h) if explicit || has_models(&h) => Some(h),
        _ if has_models(Path::new(SYSTEM_HOME)) => Some(PathBuf::from(SYSTEM_HOME)),
        other => other,
    }
}

/// The value of the variable `name` in `vars` (the last one set wins).
fn last<'a>(vars: &'a [(String, String)], name: &str) -> Option<&'a str> {
    vars.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// GRACE's per-user folder from the environment `vars`; `None` when neither
/// `GRACE_HOME` nor a home directory is known. A relative value is taken as
/// given (against the current directory), as the shell would.
pub fn grace_home(vars: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| last(vars, name).filter(|v| !v.is_empty());
    if let Some(home) = var(HOME_VAR) {
        return Some(PathBuf::from(home));
    }
    if cfg!(target_os = "macos") {
        return var("HOME").map(|h| PathBuf::from(h).join("Library/Application Support/grace"));
    }
    // XDG: a relative XDG_DATA_HOME is invalid and ignored.
    if let Some(data) = var("XDG_DATA_HOME").filter(|d| d.starts_with('/')) {
        return Some(PathBuf::from(data).join("grace"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".local/share/grace"))
}

/// GRACE's per-user cache folder, for files it can make again (the
/// embedding model prepared for fast loading): systemd's
/// `$CACHE_DIRECTORY` (a unit's `CacheDirectory=`), else
/// `$XDG_CACHE_HOME/grace`, else `~/.cache/grace` (on macOS
/// `~/Library/Caches/grace`); `None` when none is known.
pub fn cache_home(vars: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| last(vars, name).filter(|v| v.starts_with('/'));
    // systemd lists several folders with `:` when a unit names several.
    if let Some(dir) = var("CACHE_DIRECTORY").and_then(|d| d.split(':').next()) {
        return Some(PathBuf::from(dir));
    }
    if cfg!(target_os = "macos") {
        return var("HOME").map(|h| PathBuf::from(h).join("Library/Caches/grace"));
    }
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(cache).join("grace"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache/grace"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::vars;

    #[test]
    fn grace_home_wins_then_the_platform_data_folder() {
        let v = vars(&[
            ("HOME", "/home/ann"),
            ("XDG_DATA_HOME", "/data"),
            ("GRACE_HOME", "/opt/grace"),
        ]);
        assert_eq!(grace_home(&v), Some(PathBuf::from("/opt/grace")));
        if cfg!(target_os = "macos") {
            return;
        }
        let v = vars(&[("HOME", "/home/ann"), ("XDG_DATA_HOME", "/data")]);
        assert_eq!(grace_home(&v), Some(PathBuf::from("/data/grace")));
        // Empty and relative values are not folders to use.
        let v = vars(&[
            ("HOME", "/home/ann"),
            ("XDG_DATA_HOME", "rel"),
            ("GRACE_HOME", ""),
        ]);
        assert_eq!(
            grace_home(&v),
            Some(PathBuf::from("/home/ann/.local/share/grace"))
        );
        assert_eq!(grace_home(&[]), None);
        // Any text is a folder name; a relative one is taken as given.
        let v = vars(&[("GRACE_HOME", "/srv/データ/grâce")]);
        assert_eq!(grace_home(&v), Some(PathBuf::from("/srv/データ/grâce")));
        let v = vars(&[("GRACE_HOME", "../g")]);
        assert_eq!(grace_home(&v), Some(PathBuf::from("../g")));
    }

    #[test]
    fn the_cache_folder_is_systemds_then_xdgs_then_the_homes() {
        if cfg!(target_os = "macos") {
            return;
        }
        let all = vars(&[
            ("HOME", "/home/ann"),
            ("XDG_CACHE_HOME", "/c"),
            ("CACHE_DIRECTORY", "/var/cache/grace:/var/cache/other"),
        ]);
        assert_eq!(cache_home(&all), Some(PathBuf::from("/var/cache/grace")));
        let v = vars(&[("HOME", "/home/ann"), ("XDG_CACHE_HOME", "/c")]);
        assert_eq!(cache_home(&v), Some(PathBuf::from("/c/grace")));
        // Relative values are not folders to write in.
        let v = vars(&[("HOME", "/home/ann"), ("XDG_CACHE_HOME", "c")]);
        assert_eq!(
            cache_home(&v),
            Some(PathBuf::from("/home/ann/.cache/grace"))
        );
        assert_eq!(cache_home(&vars(&[("HOME", "rel")])), None);
        assert_eq!(cache_home(&[]), None);
    }

    #[test]
    fn the_system_models_serve_a_user_without_their_own() {
        let ann = vars(&[("HOME", "/home/ann")]);
        let user = PathBuf::from("/home/ann/.local/share/grace");
        let system = PathBuf::from(SYSTEM_HOME);
        let only = |dir: &'static str| move |p: &Path| p == Path::new(dir);
        // The user's own models win; else the package's; else the user's
        // folder all the same (its "model missing" error names it).
        assert_eq!(
            resolve_home(&ann, &|p: &Path| p == user || p == system),
            Some(user.clone())
        );
        assert_eq!(resolve_home(&ann, &only(SYSTEM_HOME)), Some(system));
        assert_eq!(resolve_home(&ann, &|_: &Path| false), Some(user));
        // GRACE_HOME is taken as given.
        let set = vars(&[("HOME", "/home/ann"), ("GRACE_HOME", "/opt/g")]);
        assert_eq!(
            resolve_home(&set, &only(SYSTEM_HOME)),
            Some(PathBuf::from("/opt/g"))
        );
    }
}
