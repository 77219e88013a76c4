//! The serial console of a machine in the browser.
//!
//! A browser cannot put a bearer token on a WebSocket, so opening a console
//! takes two steps, as KubeVirt's own `vm-console-proxy` does:
//!
//! 1. `POST /api/v1/vms/{name}/console-ticket` (the owner; admins use
//!    `/api/v1/admin/vms/{namespace}/{name}/console-ticket`) checks who asks
//!    and that the machine is Running, and returns a [`ticket`]: signed,
//!    valid for 30 s, bound to the user, the machine and the session that
//!    asked.
//! 2. `GET /api/v1/vms/{name}/console?ticket=...` checks the `Origin`, the
//!    ticket and the session again, [redeems](redemption) the ticket (once,
//!    across every API replica), upgrades to a WebSocket and [relays](relay)
//!    it to KubeVirt's `console` subresource, [dialled](dial) as Kite's
//!    ServiceAccount.
//!
//! The relay closes the console after `KitePlatform.spec.consoleIdleSeconds`
//! without input, and at once when the user's level changes, the account is
//! deleted or signed out, or the machine stops.

pub mod dial;
pub mod redemption;
pub mod relay;
pub mod ticket;
