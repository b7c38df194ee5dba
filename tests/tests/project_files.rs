//! The README's commands, CI, the compose file and crate isolation stay consistent.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::process::Command;

use pico_suite::images::IMAGES;
use pico_workspace_tests::{sink_crates, workspace_root};

fn read(path: &str) -> String {
    std::fs::read_to_string(workspace_root().join(path)).unwrap()
}

#[test]
fn readme_has_the_two_commands_and_ci_calls_the_test_one() {
    let readme = read("README.md");
    assert!(
        readme.contains("\n./scripts/main-job.sh\n"),
        "README names the main job"
    );
    assert!(
        readme.contains("\n./scripts/test.sh\n"),
        "README names the test command"
    );
    let ci = read(".ci/run");
    assert!(
        ci.contains("./scripts/test.sh"),
        ".ci/run must call the README's test command"
    );
}

#[test]
fn compose_uses_the_images_the_docker_provider_uses() {
    let compose = read("docker/compose.yml");
    for (service, image) in IMAGES {
        assert!(
            compose.contains(&format!("  {service}:\n    image: {image}\n")),
            "docker/compose.yml must run {service} as {image}"
        );
    }
    let images_in_compose = compose
        .lines()
        .filter(|l| l.trim_start().starts_with("image:"))
        .count();
    assert_eq!(
        images_in_compose,
        IMAGES.len(),
        "compose has images the provider does not know"
    );
}

#[test]
fn each_sink_crate_builds_without_other_sinks_clients() {
    let crates = sink_crates();
    for name in &crates {
        let out = Command::new(env!("CARGO"))
            .args([
                "tree",
                "--offline",
                "-e",
                "normal",
                "--prefix",
                "none",
                "-p",
                name,
            ])
            .current_dir(workspace_root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cargo tree -p {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tree = String::from_utf8(out.stdout).unwrap();
        for other in crates.iter().filter(|o| *o != name) {
            assert!(
                !tree.lines().any(|l| l.starts_with(&format!("{other} "))),
                "{name} pulls in {other}"
            );
        }
        if name == "pico-sink-stdout" {
            assert!(!tree.contains("reqwest"), "stdout pulls in an HTTP client");
        }
    }
}

/// Workspace members, from the root manifest's `members` list.
fn members() -> Vec<String> {
    let root = read("Cargo.toml");
    let list = root
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap();
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

#[test]
fn every_publishable_crate_is_ready_for_crates_io() {
    let members = members();
    assert!(members.len() > 20, "{members:?}");
    let mut publishable = 0;
    for dir in members {
        let manifest = read(&format!("{dir}/Cargo.toml"));
        if manifest.contains("publish = false") {
            continue;
        }
        publishable += 1;
        for field in [
            "description = ",
            "license.workspace = true",
            "rust-version.workspace = true",
            "documentation = \"https://docs.rs/",
            "readme = \"README.md\"",
            "keywords = ",
            "categories = ",
            "[package.metadata.docs.rs]",
        ] {
            assert!(manifest.contains(field), "{dir}/Cargo.toml lacks {field:?}");
        }
        assert!(
            !manifest.contains("repository"),
            "{dir}: no repository exists to name"
        );
        for file in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
            let path = workspace_root().join(&dir).join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(text.len() > 200, "{} is nearly empty", path.display());
        }
    }
    assert!(publishable >= 20, "{publishable} publishable crates");
    let root = read("Cargo.toml");
    assert!(root.contains("license = \"MIT OR Apache-2.0\""));
    assert!(read("README.md").contains("Minimum Rust: 1.95"));
    assert!(root.contains("rust-version = \"1.95\""));
}
