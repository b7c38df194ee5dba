//! Pinned official images per destination: the docker provider starts these, and
//! `docker/compose.yml` uses the same tags (a workspace test keeps the two in step).
//! `PICO_<SINK>_IMAGE` overrides one (for a locally built image).

/// `(service, image:tag)` for every destination of the mission that runs in a container.
pub const IMAGES: &[(&str, &str)] = &[
    ("postgres", "postgres:17.6"),
    ("clickhouse", "clickhouse/clickhouse-server:25.3"),
    ("influxdb", "influxdb:2.7"),
    ("mongodb", "mongo:8.0"),
    (
        "elasticsearch",
        "docker.elastic.co/elasticsearch/elasticsearch:9.1.3",
    ),
    ("meilisearch", "getmeili/meilisearch:v1.16"),
    ("surrealdb", "surrealdb/surrealdb:v3.0.0"),
    ("quickwit", "quickwit/quickwit:0.8.2"),
    ("doris-fe", "apache/doris:fe-2.1.10"),
    ("doris-be", "apache/doris:be-2.1.10"),
    ("minio", "minio/minio:RELEASE.2025-04-22T22-12-26Z"),
    ("iceberg-rest", "apache/iceberg-rest-fixture:1.9.2"),
    ("kafka", "apache/kafka:4.1.0"),
];

/// The image for `service`, honouring `PICO_<SERVICE>_IMAGE`.
pub fn image(service: &str) -> Option<String> {
    let var = format!(
        "PICO_{}_IMAGE",
        service.to_ascii_uppercase().replace('-', "_")
    );
    std::env::var(var).ok().or_else(|| {
        IMAGES
            .iter()
            .find(|(s, _)| *s == service)
            .map(|(_, i)| (*i).to_owned())
    })
}
