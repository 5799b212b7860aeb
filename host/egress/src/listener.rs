//! What the proxy serves on: any listener of byte streams (TCP, Unix sockets).

use std::future::Future;
use std::io;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// A source of client connections. Implemented for tokio's [`TcpListener`] and
/// [`UnixListener`]; the sandbox reaches the proxy through a Unix socket bound into it, a
/// container through a socket in its network namespace.
pub trait Listener: Send + 'static {
    /// One client connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// The next client connection.
    fn accept_client(&mut self) -> impl Future<Output = io::Result<Self::Io>> + Send;
}

impl Listener for TcpListener {
    type Io = TcpStream;

    async fn accept_client(&mut self) -> io::Result<TcpStream> {
        let (stream, _) = self.accept().await?;
        // Requests and responses are small writes: no Nagle delay on the loopback hop.
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

impl Listener for UnixListener {
    type Io = UnixStream;

    async fn accept_client(&mut self) -> io::Result<UnixStream> {
        let (stream, _) = self.accept().await?;
        Ok(stream)
    }
}
