//! Where the provider's Docker calls run: the SDK's plugin-owned runtime (time and I/O
//! enabled). A plugin cannot use the host's tokio, so the Docker client is created and used
//! there; the returned futures can be awaited from any executor and dropping one aborts the
//! work.

pub(crate) use agentcompass_plugin_api::sdk::runtime::spawn;
