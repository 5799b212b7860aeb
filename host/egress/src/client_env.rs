//! What a client process needs to use the proxy: the proxy variables.

/// Proxy variables, set in upper and lower case (curl reads only `http_proxy` in lower case).
const PROXY_VARS: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"];

/// What never goes through the proxy: the client's own loopback (a sandbox's or a
/// container's, which the proxy's own `localhost` is not).
pub const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// The variables that send a command's traffic to the proxy at `url` (which may hold the
/// session's token): `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` in upper and lower case, and
/// `NO_PROXY`/`no_proxy` = [`NO_PROXY`].
pub fn proxy_env(url: &str) -> Vec<(String, String)> {
    let mut env = Vec::with_capacity(PROXY_VARS.len() * 2 + 2);
    for name in PROXY_VARS {
        env.push((name.to_string(), url.to_string()));
        env.push((name.to_ascii_lowercase(), url.to_string()));
    }
    env.push(("NO_PROXY".to_string(), NO_PROXY.to_string()));
    env.push(("no_proxy".to_string(), NO_PROXY.to_string()));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_in_both_cases_and_loopback_left_out() {
        let env = proxy_env("http://agent:t@127.0.0.1:3128");
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "HTTP_PROXY",
                "http_proxy",
                "HTTPS_PROXY",
                "https_proxy",
                "ALL_PROXY",
                "all_proxy",
                "NO_PROXY",
                "no_proxy"
            ]
        );
        assert!(env[..6]
            .iter()
            .all(|(_, v)| v == "http://agent:t@127.0.0.1:3128"));
        assert!(env[6..].iter().all(|(_, v)| v == "localhost,127.0.0.1,::1"));
    }
}
