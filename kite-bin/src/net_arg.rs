//! An address or a CIDR on the command line (`--trusted-proxy`,
//! `--proxy-protocol-from`): a bare address is its own /32 or /128.

/// Parses `10.42.0.0/16` or `10.42.0.7`.
pub(crate) fn parse_net(text: &str) -> Result<ipnet::IpNet, String> {
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("'{text}' is not an address or a CIDR such as 10.42.0.0/16"))
}
