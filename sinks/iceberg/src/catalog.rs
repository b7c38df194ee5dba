//! The pinned catalog view commits go through.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use iceberg::table::Table;
use iceberg::{
    Catalog, Error, ErrorKind, Namespace, NamespaceIdent, Result, TableCommit, TableCreation,
    TableIdent,
};

/// A view of a catalog whose `load_table` returns the table as the sink read it, so that a
/// transaction's commit carries requirements on exactly that snapshot instead of being
/// re-applied onto whatever is current. After one refused commit it refuses to load again, so
/// the transaction's own retries stop at once and the sink re-reads its watermark.
#[derive(Debug)]
pub(crate) struct PinnedCatalog {
    inner: Arc<dyn Catalog>,
    table: Table,
    refused: AtomicBool,
}

impl PinnedCatalog {
    pub(crate) fn new(inner: Arc<dyn Catalog>, table: Table) -> Self {
        Self {
            inner,
            table,
            refused: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl Catalog for PinnedCatalog {
    async fn list_namespaces(
        &self,
        parent: Option<&NamespaceIdent>,
    ) -> Result<Vec<NamespaceIdent>> {
        self.inner.list_namespaces(parent).await
    }
    async fn create_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> Result<Namespace> {
        self.inner.create_namespace(namespace, properties).await
    }
    async fn get_namespace(&self, namespace: &NamespaceIdent) -> Result<Namespace> {
        self.inner.get_namespace(namespace).await
    }
    async fn namespace_exists(&self, namespace: &NamespaceIdent) -> Result<bool> {
        self.inner.namespace_exists(namespace).await
    }
    async fn update_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> Result<()> {
        self.inner.update_namespace(namespace, properties).await
    }
    async fn drop_namespace(&self, namespace: &NamespaceIdent) -> Result<()> {
        self.inner.drop_namespace(namespace).await
    }
    async fn list_tables(&self, namespace: &NamespaceIdent) -> Result<Vec<TableIdent>> {
        self.inner.list_tables(namespace).await
    }
    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> Result<Table> {
        self.inner.create_table(namespace, creation).await
    }
    async fn load_table(&self, table: &TableIdent) -> Result<Table> {
        if table != self.table.identifier() {
            return self.inner.load_table(table).await;
        }
        if self.refused.load(Ordering::SeqCst) {
            return Err(Error::new(
                ErrorKind::CatalogCommitConflicts,
                "the table changed since its watermark was read",
            ));
        }
        Ok(self.table.clone())
    }
    async fn drop_table(&self, table: &TableIdent) -> Result<()> {
        self.inner.drop_table(table).await
    }
    async fn purge_table(&self, table: &TableIdent) -> Result<()> {
        self.inner.purge_table(table).await
    }
    async fn table_exists(&self, table: &TableIdent) -> Result<bool> {
        self.inner.table_exists(table).await
    }
    async fn rename_table(&self, src: &TableIdent, dest: &TableIdent) -> Result<()> {
        self.inner.rename_table(src, dest).await
    }
    async fn register_table(&self, table: &TableIdent, metadata_location: String) -> Result<Table> {
        self.inner.register_table(table, metadata_location).await
    }
    async fn update_table(&self, commit: TableCommit) -> Result<Table> {
        let result = self.inner.update_table(commit).await;
        if matches!(&result, Err(e) if e.kind() == ErrorKind::CatalogCommitConflicts) {
            self.refused.store(true, Ordering::SeqCst);
        }
        result
    }
}
