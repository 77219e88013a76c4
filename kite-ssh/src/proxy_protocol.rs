//! The PROXY protocol, version 2: a load balancer that cannot keep the
//! client's address as the connection's source puts a binary header before
//! the client's bytes, naming it. The router reads that header only from the
//! sources its options name ([`crate::RouterOptions::proxy_protocol_from`]),
//! and requires it from them; from anyone else the connection is taken as it
//! comes, so a client cannot claim another's address.

use std::net::SocketAddr;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The twelve bytes every version 2 header starts with.
const SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

/// The most address and TLV bytes a header may carry; load balancers send a
/// few hundred at most (addresses, a connection id, a VPC endpoint name).
const MAX_PAYLOAD: usize = 4096;

/// Why a connection from a load balancer was not taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeaderError {
    /// The connection did not start with a version 2 header.
    #[error("the connection does not start with a PROXY protocol v2 header{}", if *.0 { " (it is a version 1 text header, which is not accepted)" } else { "" })]
    Missing(bool),
    /// The header announces more bytes than any load balancer sends.
    #[error("the PROXY protocol header announces {0} bytes, more than {MAX_PAYLOAD}")]
    TooLong(usize),
    /// The header is malformed.
    #[error("the PROXY protocol header is malformed: {0}")]
    Malformed(#[from] ppp::v2::ParseError),
    /// The connection failed or ended while the header was read.
    #[error("reading the PROXY protocol header: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads the header at the start of `stream` (exactly its bytes, nothing of
/// what follows) and returns the client's address it names. A `LOCAL`
/// header (the load balancer's own health check) or one without an IP
/// address keeps `peer`.
pub(crate) async fn client_address<S: AsyncRead + Unpin>(
    stream: &mut S,
    peer: SocketAddr,
) -> Result<SocketAddr, HeaderError> {
    let mut header = vec![0u8; 16];
    stream.read_exact(&mut header).await?;
    if header[..12] != SIGNATURE {
        return Err(HeaderError::Missing(header.starts_with(b"PROXY ")));
    }
    let length = usize::from(u16::from_be_bytes([header[14], header[15]]));
    if length > MAX_PAYLOAD {
        return Err(HeaderError::TooLong(length));
    }
    header.resize(16 + length, 0);
    stream.read_exact(&mut header[16..]).await?;
    let parsed = ppp::v2::Header::try_from(header.as_slice())?;
    Ok(match (parsed.command, parsed.addresses) {
        (ppp::v2::Command::Proxy, ppp::v2::Addresses::IPv4(ip)) => {
            SocketAddr::from((ip.source_address, ip.source_port))
        }
        (ppp::v2::Command::Proxy, ppp::v2::Addresses::IPv6(ip)) => {
            SocketAddr::from((ip.source_address, ip.source_port))
        }
        _ => peer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ppp::v2::{Builder, Command, Protocol, Version};

    fn peer() -> SocketAddr {
        "10.0.0.1:5000".parse().unwrap()
    }

    fn header(source: &str, command: Command) -> Vec<u8> {
        let source = source.parse::<SocketAddr>().unwrap();
        let destination = if source.is_ipv4() { "10.0.0.2:2222" } else { "[2001:db8::2]:2222" };
        let addresses = (source, destination.parse::<SocketAddr>().unwrap());
        Builder::with_addresses(Version::Two | command, Protocol::Stream, addresses).build().unwrap()
    }

    #[tokio::test]
    async fn the_client_address_is_the_headers_and_what_follows_is_left_unread() {
        let mut bytes = header("203.0.113.7:40000", Command::Proxy);
        bytes.extend_from_slice(b"SSH-2.0-client\r\n");
        let mut stream = bytes.as_slice();
        assert_eq!(client_address(&mut stream, peer()).await.unwrap(), "203.0.113.7:40000".parse().unwrap());
        assert_eq!(stream, b"SSH-2.0-client\r\n");
        let v6 = header("[2001:db8::7]:40000", Command::Proxy);
        assert_eq!(client_address(&mut v6.as_slice(), peer()).await.unwrap(), "[2001:db8::7]:40000".parse().unwrap());
    }

    #[tokio::test]
    async fn a_local_header_keeps_the_peer() {
        let bytes = header("203.0.113.7:40000", Command::Local);
        assert_eq!(client_address(&mut bytes.as_slice(), peer()).await.unwrap(), peer());
    }

    #[tokio::test]
    async fn what_is_not_a_version_2_header_is_refused_and_says_why() {
        let mut plain = b"SSH-2.0-OpenSSH_9.2\r\n".as_slice();
        let error = client_address(&mut plain, peer()).await.unwrap_err();
        assert_eq!(error.to_string(), "the connection does not start with a PROXY protocol v2 header");
        let mut v1 = b"PROXY TCP4 203.0.113.7 10.0.0.2 40000 2222\r\n".as_slice();
        assert!(client_address(&mut v1, peer()).await.unwrap_err().to_string().contains("version 1"));
        let mut huge = SIGNATURE.to_vec();
        huge.extend_from_slice(&[0x21, 0x11, 0xff, 0xff]);
        assert!(matches!(client_address(&mut huge.as_slice(), peer()).await, Err(HeaderError::TooLong(65535))));
        let mut cut = header("203.0.113.7:40000", Command::Proxy);
        cut.truncate(20);
        assert!(matches!(client_address(&mut cut.as_slice(), peer()).await, Err(HeaderError::Io(_))));
    }
}
