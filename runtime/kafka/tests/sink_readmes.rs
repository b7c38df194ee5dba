//! Every sink crate's README shows the `[sink]` section of a pico-kafka pipeline file under
//! "## Under pico-kafka": each is read here as a whole pipeline file, as a user would copy it,
//! and the sink it describes is built.

use std::path::PathBuf;

use pico_kafka::Pipeline;
use pico_kafka::sinks::KINDS;

/// The ```toml block of the README's "## Under pico-kafka" section.
fn readme_section(kind: &str) -> Result<String, String> {
    // At run time (cargo and nextest set it): the compile-time value names whichever checkout
    // last built this binary in a shared target directory.
    let here = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let path = here.join("../../sinks").join(kind).join("README.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (_, section) = text
        .split_once("\n## Under pico-kafka\n")
        .ok_or_else(|| format!("{} has no \"## Under pico-kafka\" section", path.display()))?;
    let section = section.split("\n## ").next().unwrap_or_default();
    let (_, block) = section.split_once("```toml\n").ok_or_else(|| {
        format!(
            "{}: its pico-kafka section has no toml block",
            path.display()
        )
    })?;
    let (block, _) = block
        .split_once("```")
        .ok_or_else(|| format!("{}: the toml block is not closed", path.display()))?;
    Ok(block.to_owned())
}

#[tokio::test]
async fn every_sink_readme_shows_a_sink_section_that_a_pipeline_reads() {
    let mut read = Vec::new();
    for kind in KINDS.iter().filter(|k| k.built) {
        let section = readme_section(kind.name).unwrap_or_else(|e| panic!("{e}"));
        let file = format!(
            "[kafka]\nbrokers = \"127.0.0.1:9092\"\ngroup = \"g\"\ntopics = [\"orders\"]\n\n{section}"
        );
        let pipeline = Pipeline::from_toml(&file)
            .unwrap_or_else(|e| panic!("sinks/{}/README.md: {e}", kind.name));
        assert_eq!(pipeline.sink.kind(), kind.name);
        let namespace = pipeline.sink.scope().namespace().map(|n| n.as_str());
        assert_eq!(
            namespace,
            Some("cluster-a"),
            "sinks/{}/README.md",
            kind.name
        );
        // Building makes no connection, except Iceberg's, which opens its catalog.
        if kind.name != "iceberg"
            && let Err(e) = pipeline.sink.build().await
        {
            panic!("sinks/{}/README.md: the sink refused it: {e}", kind.name);
        }
        read.push(kind.name);
    }
    println!("{} sink READMEs read: {}", read.len(), read.join(", "));
    assert!(read.contains(&"stdout"));
}

#[test]
fn a_readme_without_the_section_is_reported() {
    // The check above can fail: a crate README without the section is named.
    let missing = readme_section("core").err().unwrap_or_default();
    assert!(
        missing.contains("no \"## Under pico-kafka\" section"),
        "{missing}"
    );
}
