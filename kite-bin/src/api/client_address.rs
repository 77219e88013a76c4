//! The address a request comes from, for the sign-in limits: the peer's,
//! or, when the peer is a trusted proxy (an ingress controller), the
//! address the proxies recorded in `X-Forwarded-For`.
//!
//! Only proxies named with `--trusted-proxy` are believed: anyone else
//! could write any `X-Forwarded-For` to escape the per-address limit.

use axum::http::HeaderMap;
use ipnet::IpNet;
use std::net::IpAddr;

/// The client's address: walking `X-Forwarded-For` from the right (the
/// entry the nearest proxy added), the first address that is not a trusted
/// proxy; the peer itself when it is not trusted or no such address exists.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |address: &IpAddr| trusted.iter().any(|net| net.contains(address));
    if !is_trusted(&peer) {
        return peer;
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect::<Vec<_>>();
    for entry in forwarded.iter().rev() {
        match entry.parse::<IpAddr>() {
            Ok(address) if is_trusted(&address) => continue,
            Ok(address) => return address,
            // A malformed entry: nothing to its left can be believed.
            Err(_) => break,
        }
    }
    peer
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-for", HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn only_a_trusted_proxy_is_believed() {
        let trusted: Vec<IpNet> = vec!["10.42.0.0/16".parse().unwrap()];
        let forwarded = headers(&["203.0.113.7, 10.42.0.5"]);
        assert_eq!(
            client_address("10.42.0.9".parse().unwrap(), &forwarded, &trusted),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_address("198.51.100.1".parse().unwrap(), &forwarded, &trusted),
            "198.51.100.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_address("10.42.0.9".parse().unwrap(), &forwarded, &[]),
            "10.42.0.9".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn a_client_cannot_hide_behind_an_address_it_wrote_itself() {
        let trusted: Vec<IpNet> = vec!["10.42.0.0/16".parse().unwrap()];
        // The client wrote "1.2.3.4"; the proxy appended the client's real address.
        let forwarded = headers(&["1.2.3.4", "203.0.113.7"]);
        assert_eq!(
            client_address("10.42.0.9".parse().unwrap(), &forwarded, &trusted),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
        let garbage = headers(&["203.0.113.7, not-an-address"]);
        assert_eq!(
            client_address("10.42.0.9".parse().unwrap(), &garbage, &trusted),
            "10.42.0.9".parse::<IpAddr>().unwrap()
        );
    }
}
