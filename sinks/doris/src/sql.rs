//! DDL the sink runs through the FE's SQL endpoint, and identifier checks.

/// A database or table name the sink can use unquoted-safe inside backticks.
pub(crate) fn check_name(name: &str, what: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} {name:?} must start with a letter and hold only [A-Za-z0-9_], at most 64 characters"
        ))
    }
}

/// `CREATE DATABASE IF NOT EXISTS`.
pub(crate) fn create_database(database: &str) -> String {
    format!("CREATE DATABASE IF NOT EXISTS `{database}`")
}

/// `CREATE TABLE IF NOT EXISTS` with the Unique Key on the record identity.
pub(crate) fn create_table(database: &str, table: &str, replication: Option<u8>) -> String {
    let mut properties = vec!["\"enable_unique_key_merge_on_write\" = \"true\"".to_owned()];
    if let Some(n) = replication {
        properties.push(format!("\"replication_num\" = \"{n}\""));
    }
    format!(
        "CREATE TABLE IF NOT EXISTS `{database}`.`{table}` (\
         `pico_topic` VARCHAR(1024) NOT NULL, \
         `pico_partition` INT NOT NULL, \
         `pico_offset` LARGEINT NOT NULL, \
         `key` STRING NULL, \
         `value` STRING NOT NULL, \
         `headers` STRING NULL, \
         `ts` BIGINT NULL\
         ) UNIQUE KEY(`pico_topic`, `pico_partition`, `pico_offset`) \
         DISTRIBUTED BY HASH(`pico_topic`, `pico_partition`) BUCKETS AUTO \
         PROPERTIES ({})",
        properties.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ddl() {
        assert!(check_name("pico_events2", "table").is_ok());
        for bad in ["", "1x", "a-b", "a`b", "a b"] {
            assert!(check_name(bad, "table").is_err(), "{bad:?}");
        }
        let ddl = create_table("db", "t", Some(1));
        assert!(ddl.contains("UNIQUE KEY(`pico_topic`, `pico_partition`, `pico_offset`)"));
        assert!(ddl.contains("\"replication_num\" = \"1\""));
        assert!(!create_table("db", "t", None).contains("replication_num"));
    }
}
