//! End-to-end tests: the real `agentcompass-host` binary and the real loader against real
//! plugin `.so` files laid out in temp directories.

mod agent_image;
mod analysis;
mod api_compat;
mod artifacts;
mod bad_input;
mod bad_plugins;
mod config_resolution;
mod containment;
mod crash;
mod docker_networks;
mod environments;
mod harbor;
mod harness_free;
mod installed_agents;
mod judging;
mod layering;
mod listing;
mod model_endpoint;
mod model_gateway;
mod orchestration;
mod planning;
mod plugin_new;
mod qa;
mod rejections;
mod runtime;
mod scripted_sdk;
mod secrets;
mod secrets_under_failure;
mod session_contract;
mod slurm;
mod trust;
mod upstream_cli;
mod upstream_parity;
mod viewer;
mod viewer_browser;
