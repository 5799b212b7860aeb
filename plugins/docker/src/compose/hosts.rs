//! Under Podman, the names of a project's started services written into the `/etc/hosts` of
//! every container started after them (`ExtraHosts`), so that reaching a service by its name
//! does not hang on the engine's DNS server: Debian 12's aardvark-dns (1.4) tears its
//! sockets down and sets them up again on every network change of the machine
//! (containers/aardvark-dns#389), and a task started while another task's project comes or
//! goes was seen to get "bad address" for its own sidecar. Docker's embedded DNS has no such
//! window: nothing is added there. A service reached through its hosts entry keeps its
//! address while its container lives (a sidecar is not recreated during a session).

use agentcompass_plugin_api::tracing;

use crate::engine::{Daemon, Engine};

/// A started service's address on the project network, when the engine needs it written
/// into later containers (Podman) and the container has one. A container that cannot be
/// inspected gets no entry (its name is left to the engine's DNS): Podman reports a container
/// that already exited in a state (`stopped`) the Engine API does not define.
pub(crate) async fn address_of(docker: &Daemon, container: &str, network: &str) -> Option<String> {
    if docker.engine != Engine::Podman {
        return None;
    }
    let inspected = match docker.inspect_container(container, None).await {
        Ok(inspected) => inspected,
        Err(e) => {
            tracing::debug!(container, "no hosts entry: {e}");
            return None;
        }
    };
    inspected
        .network_settings
        .and_then(|settings| settings.networks)
        .and_then(|networks| networks.get(network).cloned())
        .and_then(|endpoint| endpoint.ip_address)
        .filter(|ip| !ip.is_empty())
}

/// `ExtraHosts` entries (`name:address`) for the services in `addresses`.
pub(crate) fn extra_hosts(addresses: &[(String, String)]) -> Option<Vec<String>> {
    (!addresses.is_empty()).then(|| {
        addresses
            .iter()
            .map(|(service, ip)| format!("{service}:{ip}"))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_each_service_with_its_address() {
        assert_eq!(extra_hosts(&[]), None);
        let addresses = [
            ("fetcher".to_string(), "10.89.0.2".to_string()),
            ("db".to_string(), "10.89.0.3".to_string()),
        ];
        assert_eq!(
            extra_hosts(&addresses),
            Some(vec![
                "fetcher:10.89.0.2".to_string(),
                "db:10.89.0.3".to_string()
            ])
        );
    }
}
