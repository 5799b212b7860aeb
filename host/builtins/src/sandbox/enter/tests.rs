//! Tests of the capability numbers and the reapers' exit statuses.

use super::init::exit_code;
use super::*;
use crate::sandbox::template::ROOT_CAPABILITIES;

#[test]
fn every_capability_bwrap_keeps_for_root_has_its_number() {
    let mask = capability_mask(ROOT_CAPABILITIES);
    assert_eq!(mask.count_ones() as usize, ROOT_CAPABILITIES.len());
    assert_eq!(capability_mask(["CAP_CHOWN", "CAP_SETFCAP"]), 1 | 1 << 31);
}

#[test]
fn a_reaper_reports_a_killed_command_as_128_plus_the_signal() {
    assert_eq!(exit_code(9), 137);
    assert_eq!(exit_code(3 << 8), 3);
}
