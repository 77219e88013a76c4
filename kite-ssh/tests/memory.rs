//! The russh fork's second patch (vendor/kite-russh/KITE-PATCH.md): the
//! messages its sessions queue stay small, since every queue allocates
//! room for 32 of them when it is made, several queues per connection.

#[test]
fn the_messages_russh_queues_stay_small() {
    let sizes = [
        ("russh::client::Msg", std::mem::size_of::<russh::client::Msg>()),
        ("russh::server::Msg", std::mem::size_of::<russh::server::Msg>()),
        ("russh::ChannelMsg", std::mem::size_of::<russh::ChannelMsg>()),
    ];
    for (name, size) in sizes {
        // Unpatched, the client's Msg is 552 bytes (a certificate held by value);
        // with a ChannelRef held by value, both Msgs were 128 and 136 bytes.
        assert!(size <= 96, "{name} is {size} bytes: box the variant that grew it");
    }
}
