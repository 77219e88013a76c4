//! `kite api`'s admin side and offers, over HTTP: levels and who may
//! change them, deleting a user with their machines, offers claimed once,
//! and the settings that write `KitePlatform`.

mod support;

use futures::future::join_all;
use kite_core::api::{KitePlatform, KiteUser, KiteVirtualMachine, PLATFORM_NAME};
use kube::Api;
use reqwest::StatusCode;
use serde_json::json;
use support::{Platform, a_machine};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managers_move_users_between_read_only_and_user_and_admins_do_the_rest() {
    let platform = Platform::start().await;
    let admin = platform.sign_up("root").await;
    let manager = platform.sign_up("meg").await;
    let user = platform.sign_up("ned").await;
    assert_eq!(manager.get("/admin/users").await.0, StatusCode::FORBIDDEN, "read-only cannot list users");
    let (status, body) = admin.patch("/admin/users/meg/access-level", json!({ "access_level": 2 })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["access_level"], 2);
    let (status, body) = manager.get("/admin/users").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["users"].as_array().unwrap().len(), 3);
    assert!(body["users"][0].get("password").is_none());
    assert_eq!(manager.patch("/admin/users/ned/access-level", json!({ "access_level": 1 })).await.0, StatusCode::OK);
    let (status, body) = manager.patch("/admin/users/ned/access-level", json!({ "access_level": 2 })).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        manager.patch("/admin/users/root/access-level", json!({ "access_level": 0 })).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, body) = admin.patch("/admin/users/root/access-level", json!({ "access_level": 0 })).await;
    assert_eq!(status, StatusCode::CONFLICT, "not your own: {body}");
    let (status, body) = admin.patch("/admin/users/ned/access-level", json!({ "access_level": 7 })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["message"].as_str().unwrap().starts_with("access_level"));
    let (status, body) = admin.patch("/admin/users/ned/access-level", json!({ "access_level": 0 })).await;
    assert_eq!(status, StatusCode::OK, "demoting to 0 works: {body}");
    assert_eq!(user.get("/me").await.1["user"]["access_level"], 0);
    assert_eq!(manager.delete("/admin/users/ned").await.0, StatusCode::FORBIDDEN, "only admins delete users");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_user_asks_for_their_machines_deletion_and_ends_their_session() {
    let platform = Platform::start().await;
    let admin = platform.sign_up("root").await;
    let user = platform.sign_up("olga").await;
    platform.set_level(&user, 1).await;
    assert_eq!(user.post("/vms", a_machine("box", "olga_box")).await.0, StatusCode::CREATED);
    let (status, body) = admin.delete("/admin/users/olga").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let vms = Api::<KiteVirtualMachine>::all(platform.client.clone()).list(&Default::default()).await.unwrap();
    assert!(vms.items.iter().all(|vm| vm.spec.delete), "every machine of hers is being deleted");
    let users = Api::<KiteUser>::all(platform.client.clone()).list(&Default::default()).await.unwrap();
    assert_eq!(users.items.len(), 1);
    kite_testkit::fixtures::eventually(std::time::Duration::from_secs(5), "her session to end", || async {
        (user.get("/me").await.0 == StatusCode::UNAUTHORIZED).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_is_claimed_once_even_by_racing_requests_and_makes_its_machine() {
    let platform = Platform::start().await;
    let admin = platform.sign_up("root").await;
    let user = platform.sign_up("pia").await;
    let pia = platform.id_of(&user).await;
    let (status, body) = admin
        .post(
            "/admin/vm-offers",
            json!({ "targetUser": pia, "cpu": 4, "memory": "8Gi", "disk": "40Gi", "validHours": 2 }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let offer = body["offer"]["name"].as_str().unwrap().to_string();
    let offers =
        kite_testkit::fixtures::eventually(std::time::Duration::from_secs(5), "the offer to be listed", || async {
            let (_, body) = user.get("/vm-offers").await;
            (!body["offers"].as_array().unwrap().is_empty()).then_some(body)
        })
        .await;
    assert_eq!(offers["offers"][0]["cpu"], 4);
    let claims = (0..3).map(|i| {
        let user = user.clone();
        let path = format!("/vm-offers/{offer}/claim");
        async move { user.post(&path, json!({ "vmName": format!("gift{i}"), "sshId": format!("pia_{i}"), "initialLoginPassword": "machine-password" })).await }
    });
    let answers = join_all(claims).await;
    let created: Vec<_> = answers.iter().filter(|(s, _)| *s == StatusCode::CREATED).collect();
    assert_eq!(created.len(), 1, "read-only users may claim, once: {answers:?}");
    assert!(
        answers
            .iter()
            .all(|(s, _)| *s == StatusCode::CREATED || *s == StatusCode::CONFLICT || *s == StatusCode::NOT_FOUND),
        "{answers:?}"
    );
    let vm = &created[0].1["vm"];
    assert_eq!((vm["cpu"].as_u64(), vm["memory"].as_str(), vm["disk"].as_str()), (Some(4), Some("8Gi"), Some("40Gi")));
    let vms = Api::<KiteVirtualMachine>::all(platform.client.clone()).list(&Default::default()).await.unwrap();
    assert_eq!(vms.items.len(), 1);
    let (status, body) = user
        .post(&format!("/vm-offers/{offer}/claim"), json!({ "sshId": "pia_again", "sshPassword": "machine-password" }))
        .await;
    assert!(status == StatusCode::NOT_FOUND || status == StatusCode::CONFLICT, "{status} {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_claim_leaves_the_offer_available() {
    let platform = Platform::start().await;
    let admin = platform.sign_up("root").await;
    let first = platform.sign_up("quin").await;
    platform.set_level(&first, 1).await;
    assert_eq!(first.post("/vms", a_machine("mine", "taken_id")).await.0, StatusCode::CREATED);
    let user = platform.sign_up("rae").await;
    let rae = platform.id_of(&user).await;
    let (_, body) =
        admin.post("/admin/vm-offers", json!({ "targetUser": rae, "cpu": 2, "memory": "4Gi", "disk": "20Gi" })).await;
    let offer = body["offer"]["name"].as_str().unwrap().to_string();
    let (status, body) = user
        .post(&format!("/vm-offers/{offer}/claim"), json!({ "sshId": "taken_id", "sshPassword": "machine-password" }))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (_, body) = user.get("/vm-offers").await;
    assert_eq!(body["offers"][0]["phase"], "Available", "{body}");
    let (status, body) = user
        .post(&format!("/vm-offers/{offer}/claim"), json!({ "sshId": "rae_id", "sshPassword": "machine-password" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_write_the_platform_and_show_the_gateway_as_observed() {
    let platform = Platform::start().await;
    let admin = platform.sign_up("root").await;
    let user = platform.sign_up("sam").await;
    assert_eq!(user.get("/admin/settings").await.0, StatusCode::FORBIDDEN);
    let (status, body) = admin
        .patch("/admin/settings", json!({ "baseDomain": "VMs.Example.com.", "sshGateway": { "externalEnabled": true, "externalPort": 2222 } }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["config"]["baseDomain"], "vms.example.com");
    assert_eq!(body["config"]["sshGateway"]["externalEnabled"], true);
    let stored = Api::<KitePlatform>::all(platform.client.clone()).get(PLATFORM_NAME).await.unwrap();
    assert_eq!(stored.spec.ssh_gateway.external_port, Some(2222));
    assert_eq!(stored.spec.golden_images.len(), 1, "other fields are kept");
    let (status, body) = admin.patch("/admin/settings", json!({ "sshGateway": { "externalPort": 0 } })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = admin.patch("/admin/settings", json!({ "baseDomain": "not a domain!" })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "the CRD schema refuses it: {body}");
    assert!(body["message"].as_str().unwrap().contains("baseDomain"), "{body}");
    let (status, body) = admin.patch("/admin/settings", json!({ "sshGateway": { "externalPort": 70000 } })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let rules = json!({ "mode": "Invited", "invitedEmails": ["ada@example.org"], "perHour": 30 });
    let (status, body) = admin.patch("/admin/settings", json!({ "signup": rules })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["config"]["signup"]["mode"], "Invited");
    assert_eq!(body["config"]["signup"]["perAddressPerHour"], 20, "a field left out takes its default");
    let stored = Api::<KitePlatform>::all(platform.client.clone()).get(PLATFORM_NAME).await.unwrap();
    assert_eq!(stored.spec.signup.invited_emails, ["ada@example.org"]);
    let (status, body) = admin.patch("/admin/settings", json!({ "signup": { "perHour": 0 } })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "the CRD schema refuses it: {body}");
    let (status, body) = admin.patch("/admin/settings", json!({ "signup": { "mode": "Invite" } })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["message"].as_str().unwrap().contains("signup"), "the refusal names the field: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_offer_is_not_listed_and_cannot_be_claimed() {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kite_core::api::{KiteVirtualMachineOffer, KiteVirtualMachineOfferSpec};
    let platform = Platform::start().await;
    platform.sign_up("root").await;
    let user = platform.sign_up("uma").await;
    let namespace = user.get("/me").await.1["user"]["namespace"].as_str().unwrap().to_string();
    let past = jiff::Timestamp::now().checked_sub(jiff::SignedDuration::from_hours(1)).unwrap();
    let offer = KiteVirtualMachineOffer::new(
        "old",
        KiteVirtualMachineOfferSpec {
            cpu: 2,
            memory: Quantity("4Gi".into()),
            disk: Quantity("20Gi".into()),
            image: kite_testkit::fixtures::IMAGE.into(),
            expires_at: Time(past),
            created_by: "root".into(),
        },
    );
    Api::<KiteVirtualMachineOffer>::namespaced(platform.client.clone(), &namespace)
        .create(&Default::default(), &offer)
        .await
        .unwrap();
    let (status, body) =
        kite_testkit::fixtures::eventually(std::time::Duration::from_secs(5), "the API to know the offer", || async {
            let answer = user
                .post("/vm-offers/old/claim", json!({ "sshId": "uma_old", "sshPassword": "machine-password" }))
                .await;
            (answer.0 != StatusCode::NOT_FOUND).then_some(answer)
        })
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["message"].as_str().unwrap().contains("expired"), "{body}");
    assert_eq!(user.get("/vm-offers").await.1["offers"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_goes_to_the_user_its_id_names_and_a_username_cannot_pose_as_an_email() {
    let platform = Platform::start().await;
    let admin = platform.sign_up("root").await;
    let sam = platform.sign_up("sam").await;
    // A username shaped like someone's email would have captured offers meant for them.
    let (status, body) = platform
        .anonymous()
        .post(
            "/auth/signup",
            json!({ "username": "sam@example.org", "email": "mallory@example.org", "password": "mallory-password" }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["message"], "username: cannot contain '@', so that it is never taken for an email");

    // The target is the user's id; a username or an email names nobody.
    for target in ["sam", "sam@example.org"] {
        let (status, body) = admin
            .post("/admin/vm-offers", json!({ "targetUser": target, "cpu": 1, "memory": "1Gi", "disk": "20Gi" }))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{target}: {body}");
    }
    let id = platform.id_of(&sam).await;
    let (status, body) =
        admin.post("/admin/vm-offers", json!({ "targetUser": id, "cpu": 1, "memory": "1Gi", "disk": "20Gi" })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["offer"]["namespace"], format!("kite-user-{id}"), "{body}");
}
