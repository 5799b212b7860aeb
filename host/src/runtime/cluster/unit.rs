//! Reading and writing a job's unit file (the record is `agentcompass_schema::cluster::Unit`:
//! the tasks one job runs, in order, with their place in the run's task stream).

use std::path::Path;

use crate::runtime::cluster_error::ClusterRunError;

pub use agentcompass_schema::cluster::{Unit, UnitTask, UNIT_SCHEMA};

/// Writes `unit` atomically to `path`.
pub fn write_unit(unit: &Unit, path: &Path) -> Result<(), agentcompass_results::store::StoreError> {
    super::layout::write_file(path, unit, true)
}

/// Reads the unit at `path`.
pub fn read_unit(path: &Path) -> Result<Unit, ClusterRunError> {
    super::layout::read_file(path, "unit file", UNIT_SCHEMA)
}
