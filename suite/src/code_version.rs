//! The code version a suite run measures, stamped on what it reports.

use std::process::Command;

/// The checkout's commit (12 hex digits), with `-dirty` when tracked files other than
/// documentation differ from it (the generated reports in `docs/` and the READMEs a run
/// rewrites are its output, not the code it measures); `None` outside a git checkout (a
/// packaged crate, no `git` on the machine).
pub fn code_version() -> Option<String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).filter(|c| !c.is_empty())?;
    let dirty = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ":/",
        ":(top,exclude)docs",
        ":(top,exclude)*.md",
    ])
    .is_some_and(|changes| !changes.is_empty());
    Some(if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    })
}
