//! `kite api`, run as the binary against kite-testkit's API server: every
//! rule and refusal of the API, seen over HTTP as a browser or a script
//! sees it.

mod support;

use futures::future::join_all;
use kite_core::api::{KitePlatform, KiteUser, KiteVirtualMachine, PLATFORM_NAME};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use support::{Platform, Session, a_machine};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_user_is_admin_and_later_ones_read_only_even_when_they_race() {
    let platform = Platform::start().await;
    let anonymous = platform.anonymous();
    let signups = (0..5).map(|i| {
        let anonymous = anonymous.clone();
        async move {
            anonymous
                .post("/auth/signup", json!({ "username": format!("racer{i}"), "email": format!("racer{i}@example.org"), "password": "racer-password" }))
                .await
        }
    });
    let answers = join_all(signups).await;
    let levels: Vec<u64> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, StatusCode::CREATED, "{body}");
            body["user"]["access_level"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(levels.iter().filter(|l| **l == 3).count(), 1, "exactly one admin: {levels:?}");
    assert_eq!(levels.iter().filter(|l| **l == 0).count(), 4, "{levels:?}");
    let later = platform.sign_up("latecomer").await;
    assert_eq!(later.get("/me").await.1["user"]["access_level"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_are_unique_and_passwords_are_only_stored_hashed() {
    let platform = Platform::start().await;
    let ada = platform.sign_up("ada").await;
    let again = platform
        .anonymous()
        .post(
            "/auth/signup",
            json!({ "username": "someone", "email": "ADA@example.org", "password": "another-password" }),
        )
        .await;
    assert_eq!(again.0, StatusCode::CONFLICT, "{}", again.1);
    assert!(again.1["message"].as_str().unwrap().contains("email already exists"));
    let (_, me) = ada.get("/me").await;
    assert!(me["user"].get("password").is_none(), "the hash never leaves the server: {me}");
    let stored = Api::<KiteUser>::all(platform.client.clone()).get(me["user"]["name"].as_str().unwrap()).await.unwrap();
    assert!(stored.spec.password.starts_with("$argon2id$"), "{}", stored.spec.password);
    assert!(!stored.spec.password.contains("ada-password"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_fails_the_same_way_for_an_unknown_email_and_a_wrong_password_and_only_failures_count() {
    let platform = Platform::start().await;
    platform.sign_up("grace").await;
    let anonymous = platform.anonymous();
    let unknown =
        anonymous.post("/auth/login", json!({ "email": "nobody@example.org", "password": "whatever-password" })).await;
    let wrong =
        anonymous.post("/auth/login", json!({ "email": "grace@example.org", "password": "wrong-password" })).await;
    assert_eq!(unknown.0, StatusCode::UNAUTHORIZED);
    assert_eq!(unknown, wrong, "the same status and message");
    let right =
        anonymous.post("/auth/login", json!({ "email": "Grace@Example.org", "password": "grace-password" })).await;
    assert_eq!(right.0, StatusCode::OK, "{}", right.1);
    assert!(right.1["token"].is_string() && right.1["expiresIn"].as_i64().unwrap() > 0);
    for i in 0..25 {
        let again =
            anonymous.post("/auth/login", json!({ "email": "grace@example.org", "password": "grace-password" })).await;
        assert_eq!(again.0, StatusCode::OK, "sign-in {i}: only failures count against the limits");
    }
}

/// A sign-in from `from` (through the trusted proxy on loopback).
async fn sign_in_from(anonymous: &Session, from: &str, email: &str, password: &str) -> (StatusCode, Value) {
    let request = anonymous
        .http
        .post(format!("{}/api/v1/auth/login", anonymous.base))
        .header("x-forwarded-for", from)
        .json(&json!({ "email": email, "password": password }));
    anonymous.send(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guesses_at_an_account_shut_out_strangers_but_not_its_owner() {
    let platform = Platform::start_with(&["--trusted-proxy", "127.0.0.1"]).await;
    platform.sign_up("grace").await;
    let anonymous = platform.anonymous();
    let owner = "192.0.2.10";
    assert_eq!(sign_in_from(&anonymous, owner, "grace@example.org", "grace-password").await.0, StatusCode::OK);
    for i in 0..10 {
        let guess = sign_in_from(&anonymous, &format!("203.0.113.{i}"), "grace@example.org", "guess-password").await;
        assert_eq!(guess.0, StatusCode::UNAUTHORIZED, "guess {i}");
    }
    let stranger = sign_in_from(&anonymous, "198.51.100.7", "grace@example.org", "grace-password").await;
    assert_eq!(stranger.0, StatusCode::TOO_MANY_REQUESTS, "the account is shut for new addresses: {}", stranger.1);
    assert!(stranger.1["message"].as_str().unwrap().contains("too many sign-in attempts"), "{}", stranger.1);
    let again = sign_in_from(&anonymous, owner, "grace@example.org", "grace-password").await;
    assert_eq!(again.0, StatusCode::OK, "the owner's address still signs in: {}", again.1);
}

/// A sign-up of `name` from `from` (through the trusted proxy on loopback).
async fn sign_up_from(anonymous: &Session, from: &str, name: &str) -> (StatusCode, Value) {
    let body = json!({ "username": name, "email": format!("{name}@example.org"), "password": "long-enough-password" });
    let request = anonymous
        .http
        .post(format!("{}/api/v1/auth/signup", anonymous.base))
        .header("x-forwarded-for", from)
        .json(&body);
    anonymous.send(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_follows_the_platforms_rules_invitations_and_rates() {
    let platform = Platform::start_with(&["--trusted-proxy", "127.0.0.1"]).await;
    let anonymous = platform.anonymous();
    let platforms = Api::<KitePlatform>::all(platform.client.clone());
    let set = |signup: Value| {
        let platforms = platforms.clone();
        async move {
            let patch = json!({ "spec": { "signup": signup } });
            platforms.patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
        }
    };
    // Eve signs up while sign-up is open; once the API reads the new rules, her
    // second try is refused as not invited instead of as taken (and nothing new is made meanwhile).
    assert_eq!(sign_up_from(&anonymous, "198.51.100.1", "eve").await.0, StatusCode::CREATED);
    let invited: Vec<String> = (1..=6).map(|i| format!("u{i}@example.org")).collect();
    set(json!({ "mode": "Invited", "invitedEmails": invited, "perAddressPerHour": 2, "perHour": 3 })).await;
    let refused =
        kite_testkit::fixtures::eventually(Duration::from_secs(10), "the API to read the rules", || {
            let anonymous = anonymous.clone();
            async move {
                Some(sign_up_from(&anonymous, "198.51.100.1", "eve").await).filter(|a| a.0 != StatusCode::CONFLICT)
            }
        })
        .await;
    assert_eq!(refused.0, StatusCode::FORBIDDEN, "{}", refused.1);
    assert!(refused.1["message"].as_str().unwrap().contains("by invitation"), "{}", refused.1);
    assert_eq!(sign_up_from(&anonymous, "203.0.113.1", "u1").await.0, StatusCode::CREATED);
    assert_eq!(sign_up_from(&anonymous, "203.0.113.1", "u2").await.0, StatusCode::CREATED);
    let third = sign_up_from(&anonymous, "203.0.113.1", "u3").await;
    assert_eq!(third.0, StatusCode::TOO_MANY_REQUESTS, "two an hour from one address: {}", third.1);
    assert!(third.1["message"].as_str().unwrap().contains("too many sign-ups"), "{}", third.1);
    assert_eq!(sign_up_from(&anonymous, "203.0.113.2", "u3").await.0, StatusCode::CREATED);
    let fourth = sign_up_from(&anonymous, "203.0.113.3", "u4").await;
    assert_eq!(fourth.0, StatusCode::TOO_MANY_REQUESTS, "three an hour from everyone: {}", fourth.1);
    set(json!({ "mode": "Closed", "perHour": 100 })).await;
    let closed = kite_testkit::fixtures::eventually(Duration::from_secs(10), "the API to read the rules", || {
        let anonymous = anonymous.clone();
        async move { Some(sign_up_from(&anonymous, "203.0.113.4", "u5").await).filter(|a| a.0 == StatusCode::FORBIDDEN) }
    })
    .await;
    assert!(closed.1["message"].as_str().unwrap().contains("closed"), "{}", closed.1);
    assert_eq!(
        Api::<KiteUser>::all(platform.client.clone()).list(&Default::default()).await.unwrap().items.len(),
        4,
        "only eve and the three admitted sign-ups made accounts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_admin_is_the_account_the_platform_names_and_nobody_signs_up_before_it() {
    let platform = Platform::start_as_deployed().await;
    let anonymous = platform.anonymous();
    let sign_up = |name: &'static str| {
        let anonymous = anonymous.clone();
        async move {
            let body =
                json!({ "username": name, "email": format!("{name}@example.org"), "password": "long-enough-password" });
            anonymous.post("/auth/signup", body).await
        }
    };
    let (status, body) = sign_up("eve").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no admin is named: nobody signs up: {body}");
    assert!(body["message"].as_str().unwrap().contains("not open yet"), "{body}");
    let patch = json!({ "spec": { "signup": { "adminEmail": "Root@Example.org" } } });
    let platforms = Api::<KitePlatform>::all(platform.client.clone());
    platforms.patch(PLATFORM_NAME, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(sign_up("eve").await.0, StatusCode::FORBIDDEN, "not before the admin has signed up");
    let root = kite_testkit::fixtures::eventually(
        Duration::from_secs(10),
        "the API to read the admin's email",
        || async move { Some(sign_up("root").await).filter(|answer| answer.0 == StatusCode::CREATED) },
    )
    .await;
    assert_eq!(root.1["user"]["access_level"], 3, "{}", root.1);
    let (status, body) = sign_up("eve").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["user"]["access_level"], 0, "{body}");
    // Once every admin is gone, the platform waits for the named admin again.
    let users = Api::<KiteUser>::all(platform.client.clone());
    users.delete(root.1["user"]["name"].as_str().unwrap(), &Default::default()).await.unwrap();
    let admin = with_token(&platform, &root.1);
    kite_testkit::fixtures::eventually(Duration::from_secs(10), "the API to see the admin gone", || {
        let admin = admin.clone();
        async move { (admin.get("/me").await.0 == StatusCode::UNAUTHORIZED).then_some(()) }
    })
    .await;
    let refused = sign_up("mallory").await;
    assert_eq!(refused.0, StatusCode::FORBIDDEN, "{}", refused.1);
    assert!(
        users.list(&Default::default()).await.unwrap().items.iter().all(|u| u.spec.username != "mallory"),
        "an admin-less platform takes no account but its admin's"
    );
}

/// A session holding `token`, as a script would.
fn with_token(platform: &Platform, body: &Value) -> Session {
    Session { token: body["token"].as_str().map(str::to_string), ..platform.anonymous() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_everywhere_and_changing_the_password_end_the_other_sessions() {
    let platform = Platform::start().await;
    let first = platform.sign_up("kim").await;
    let anonymous = platform.anonymous();
    let login = |password: &'static str| {
        let anonymous = anonymous.clone();
        async move { anonymous.post("/auth/login", json!({ "email": "kim@example.org", "password": password })).await }
    };
    let (status, body) = login("kim-password").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let second = with_token(&platform, &body);
    let wrong = second
        .post("/me/password", json!({ "currentPassword": "not-kims-password", "newPassword": "kim-new-password" }))
        .await;
    assert_eq!(wrong.0, StatusCode::FORBIDDEN, "{}", wrong.1);
    assert_eq!(first.get("/me").await.0, StatusCode::OK, "a refused change ends nothing");
    let short = second.post("/me/password", json!({ "currentPassword": "kim-password", "newPassword": "short" })).await;
    assert_eq!(short.0, StatusCode::UNPROCESSABLE_ENTITY, "{}", short.1);
    let (status, body) = second
        .post("/me/password", json!({ "currentPassword": "kim-password", "newPassword": "kim-new-password" }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let third = with_token(&platform, &body);
    let (status, body) = first.get("/me").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the other sessions end with a change of password: {body}");
    assert!(body["message"].as_str().unwrap().contains("signed out"), "{body}");
    assert_eq!(second.get("/me").await.0, StatusCode::UNAUTHORIZED, "the session that asked ends too");
    assert_eq!(third.get("/me").await.0, StatusCode::OK, "the new session goes on");
    assert_eq!(login("kim-password").await.0, StatusCode::UNAUTHORIZED, "the old password is gone");
    let (status, body) = login("kim-new-password").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fourth = with_token(&platform, &body);
    let (status, body) = fourth.post("/auth/logout-everywhere", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(third.get("/me").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(fourth.get("/me").await.0, StatusCode::UNAUTHORIZED, "everywhere means this one too");
    let (status, body) = login("kim-new-password").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(with_token(&platform, &body).get("/me").await.0, StatusCode::OK, "a new sign-in works");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_that_names_no_possible_account_is_refused_before_it_is_counted() {
    let platform = Platform::start_with(&["--trusted-proxy", "127.0.0.1"]).await;
    let anonymous = platform.anonymous();
    let huge = format!("{}@example.org", "a".repeat(60_000));
    for (i, email) in ["", "no-at-sign", huge.as_str()].iter().cycle().take(30).enumerate() {
        let answer = sign_in_from(&anonymous, "203.0.113.50", email, "guess-password").await;
        assert_eq!(answer.0, StatusCode::UNAUTHORIZED, "attempt {i}: {}", answer.1);
        assert_eq!(answer.1["message"], "the email or password is not right");
    }
    let real = sign_in_from(&anonymous, "203.0.113.50", "nobody@example.org", "guess-password").await;
    assert_eq!(real.0, StatusCode::UNAUTHORIZED, "none of the 30 was counted: {}", real.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_the_forwarded_address_is_the_one_limited() {
    let platform = Platform::start_with(&["--trusted-proxy", "127.0.0.1"]).await;
    let anonymous = platform.anonymous();
    let attempt = |from: &'static str, i: usize| {
        let anonymous = anonymous.clone();
        async move {
            let email = format!("nobody{i}@example.org");
            sign_in_from(&anonymous, &format!("198.51.100.99, {from}"), &email, "guess-password").await.0
        }
    };
    for i in 0..20 {
        assert_eq!(attempt("203.0.113.1", i).await, StatusCode::UNAUTHORIZED, "attempt {i}");
    }
    assert_eq!(attempt("203.0.113.1", 20).await, StatusCode::TOO_MANY_REQUESTS, "the client's address is limited");
    assert_eq!(attempt("203.0.113.2", 21).await, StatusCode::UNAUTHORIZED, "another client is not");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_session_is_an_http_only_cookie_and_its_writes_need_the_csrf_token() {
    let platform = Platform::start().await;
    let user = platform.sign_up("lin").await;
    platform.set_level(&user, 1).await;
    let (mut browser, login) = Session::browser_login(&platform.base, "lin@example.org", "lin-password").await;
    let cookies: Vec<&str> = login["set-cookie"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let session = cookies.iter().find(|c| c.starts_with("kite_session=")).expect("a session cookie");
    assert!(
        session.contains("HttpOnly") && session.contains("SameSite=Lax") && session.contains("Path=/"),
        "{session}"
    );
    assert!(!session.contains("Secure"), "plain HTTP on loopback: {session}");
    assert_eq!(browser.get("/me").await.0, StatusCode::OK);
    let without = browser.post("/vms", a_machine("web", "lin_web")).await;
    assert_eq!(without.0, StatusCode::FORBIDDEN, "{}", without.1);
    assert!(without.1["message"].as_str().unwrap().contains("CSRF"));
    browser.csrf = login["body"]["csrfToken"].as_str().map(str::to_string);
    let cross_site = browser
        .send(
            browser
                .http
                .post(format!("{}/api/v1/vms", platform.base))
                .header("origin", "https://evil.example")
                .header("x-csrf-token", browser.csrf.clone().unwrap())
                .json(&a_machine("web", "lin_web")),
        )
        .await;
    assert_eq!(cross_site.0, StatusCode::FORBIDDEN, "{}", cross_site.1);
    let with = browser.post("/vms", a_machine("web", "lin_web")).await;
    assert_eq!(with.0, StatusCode::CREATED, "{}", with.1);
    let (status, body) = browser.post("/auth/logout", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Behind a proxy that terminates HTTPS, the cookies are Secure.
    let behind_tls = browser
        .http
        .post(format!("{}/api/v1/auth/login", platform.base))
        .header("x-forwarded-proto", "https")
        .json(&json!({ "email": "lin@example.org", "password": "lin-password" }))
        .send()
        .await
        .unwrap();
    let cookies: Vec<String> =
        behind_tls.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert_eq!(cookies.len(), 2, "{cookies:?}");
    assert!(cookies.iter().all(|c| c.contains("Secure") && c.starts_with("__Host-")), "{cookies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_a_sentence_naming_the_problem_never_a_500() {
    let platform = Platform::start().await;
    let user = platform.sign_up("kim").await;
    platform.set_level(&user, 2).await;
    let url = format!("{}/api/v1/vms", platform.base);
    let bearer = user.token.clone().unwrap();
    let raw = |body: &'static str, content_type: &'static str| {
        user.http.post(url.clone()).bearer_auth(bearer.clone()).header("content-type", content_type).body(body)
    };
    let (status, body) = user.send(raw("{not json", "application/json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = user.send(raw(r#"{"sshId": 7, "sshPassword": "machine-password"}"#, "application/json")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["message"].as_str().unwrap().contains("sshId"), "{body}");
    let (status, body) =
        user.send(raw(r#"{"sshId":"a","sshPassword":"machine-password","cpus":2}"#, "application/json")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["message"].as_str().unwrap().contains("cpus"), "{body}");
    let (status, _) = user.send(raw("{}", "text/plain")).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let refusals = [
        (json!({ "sshId": "9lives", "sshPassword": "machine-password" }), "sshId"),
        (
            json!({ "sshId": "root", "sshPassword": "machine-password" }),
            "sshId: root is an account the machine's system reserves",
        ),
        (json!({ "sshId": "kim", "sshPassword": "short" }), "sshPassword"),
        (json!({ "sshId": "kim", "sshPassword": "machine-password", "disk": "19Gi" }), "disk"),
        (json!({ "sshId": "kim", "sshPassword": "machine-password", "disk": 10 }), "disk"),
        (json!({ "sshId": "kim", "sshPassword": "machine-password", "domainPrefix": "www" }), "domainPrefix"),
        (json!({ "sshId": "kim", "sshPassword": "machine-password", "image": "windows-95" }), "image"),
        (json!({ "sshId": "kim", "sshPassword": "machine-password", "name": "Not A Label" }), "name"),
        (json!({ "sshId": "kim", "sshPassword": "machine-password", "cpu": 0 }), "cpu"),
        (json!({ "sshId": "kim", "sshPassword": "machine-password", "memory": "lots" }), "memory"),
    ];
    for (request, field) in refusals {
        let (status, body) = user.post("/vms", request.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{request}: {body}");
        assert!(body["message"].as_str().unwrap().starts_with(field), "{request}: {body}");
    }
    let (status, body) = user.get("/no/such/thing").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = user.send(user.http.put(format!("{}/api/v1/vms", platform.base))).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    let (status, body) = platform.anonymous().get("/vms").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_decide_who_creates_what_and_a_change_of_level_applies_at_once() {
    let platform = Platform::start().await;
    let _admin = platform.sign_up("root").await;
    let user = platform.sign_up("tom").await;
    let (status, body) = user.post("/vms", a_machine("first", "tom_first")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "read-only cannot create: {body}");
    platform.set_level(&user, 1).await;
    let (status, body) =
        user.post("/vms", json!({ "sshId": "tom_big", "sshPassword": "machine-password", "cpu": 8 })).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "level 1 has a fixed size: {body}");
    let (status, body) = user.post("/vms", a_machine("first", "tom_first")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        (body["vm"]["cpu"].as_u64(), body["vm"]["memory"].as_str(), body["vm"]["disk"].as_str()),
        (Some(2), Some("4Gi"), Some("25Gi"))
    );
    assert_eq!(user.post("/vms", a_machine("second", "tom_second")).await.0, StatusCode::CREATED);
    let (status, body) = user.post("/vms", a_machine("third", "tom_third")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "at most two: {body}");
    let (status, body) = user.patch("/vms/first", json!({ "cpu": 4 })).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no resizing at level 1: {body}");
    let (status, body) = user.delete("/vms/second").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(
        user.post("/vms", a_machine("third", "tom_third")).await.0,
        StatusCode::CREATED,
        "a deleted one no longer counts"
    );
    platform.set_level(&user, 0).await;
    let (status, body) = user.post("/vms/first/stop", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "demoted at once: {body}");
    let (status, body) = user.get("/vms").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["vms"].as_array().unwrap().len(), 3, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_ids_and_domain_prefixes_are_unique_across_users_even_when_requests_race() {
    let platform = Platform::start().await;
    platform.sign_up("root").await;
    let mut users = Vec::new();
    for name in ["amy", "bob", "cat", "dan"] {
        let user = platform.sign_up(name).await;
        platform.set_level(&user, 2).await;
        users.push(user);
    }
    let attempts = users.iter().enumerate().map(|(i, user)| {
        let user = user.clone();
        async move {
            user.post("/vms", json!({ "name": format!("m{i}"), "sshId": "shared", "sshPassword": "machine-password" }))
                .await
        }
    });
    let answers = join_all(attempts).await;
    let created = answers.iter().filter(|(s, _)| *s == StatusCode::CREATED).count();
    let refused = answers.iter().filter(|(s, _)| *s == StatusCode::CONFLICT).count();
    assert_eq!((created, refused), (1, 3), "{answers:?}");
    let prefixes = users.iter().enumerate().map(|(i, user)| {
        let user = user.clone();
        async move { user.post("/vms", json!({ "name": format!("p{i}"), "sshId": format!("p{i}_id"), "sshPassword": "machine-password", "domainPrefix": "blog" })).await }
    });
    let answers = join_all(prefixes).await;
    assert_eq!(answers.iter().filter(|(s, _)| *s == StatusCode::CREATED).count(), 1, "{answers:?}");
    let vms = Api::<KiteVirtualMachine>::all(platform.client.clone()).list(&Default::default()).await.unwrap();
    assert_eq!(vms.items.iter().filter(|vm| vm.spec.ssh_id == "shared").count(), 1);
    assert_eq!(vms.items.iter().filter(|vm| vm.spec.domain_prefix.as_deref() == Some("blog")).count(), 1);
    let stored = vms.items.iter().find(|vm| vm.spec.ssh_id == "shared").unwrap();
    let hash = stored.spec.ssh_password_hash.as_deref().unwrap();
    assert!(hash.starts_with("$argon2id$") && !hash.contains("machine-password"), "{hash}");
    // The console's hash is one the guest's crypt(3) checks: glibc's, through Python, agrees.
    let console = stored.spec.console_password_hash.as_deref().unwrap();
    assert!(console.starts_with("$6$") && !console.contains("machine-password"), "{console}");
    for (password, matches) in [("machine-password", "True"), ("wrong-password", "False")] {
        let checked = std::process::Command::new("python3")
            .args(["-W", "ignore", "-c", "import crypt, sys; print(crypt.crypt(sys.argv[1], sys.argv[2]) == sys.argv[2])"])
            .args([password, console])
            .output()
            .expect("python3 is missing: this test checks the console hash with crypt(3) through Python 3.11's crypt module");
        assert_eq!(
            String::from_utf8_lossy(&checked.stdout).trim(),
            matches,
            "{}",
            String::from_utf8_lossy(&checked.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bcrypt_password_of_the_existing_platform_signs_in_and_is_upgraded() {
    let platform = Platform::start().await;
    platform.sign_up("root").await;
    let mut legacy = kite_testkit::fixtures::a_user("legacy");
    legacy.spec.email = "legacy@example.org".into();
    legacy.spec.password = bcrypt::hash("legacy-password", 4).unwrap();
    let users = Api::<KiteUser>::all(platform.client.clone());
    users.create(&PostParams::default(), &legacy).await.unwrap();
    let anonymous = platform.anonymous();
    let answer =
        kite_testkit::fixtures::eventually(std::time::Duration::from_secs(5), "the legacy user to sign in", || {
            let anonymous = anonymous.clone();
            async move {
                let answer = anonymous
                    .post("/auth/login", json!({ "email": "legacy@example.org", "password": "legacy-password" }))
                    .await;
                (answer.0 == StatusCode::OK).then_some(answer)
            }
        })
        .await;
    assert_eq!(answer.1["user"]["email"], "legacy@example.org");
    let stored = users.get("legacy").await.unwrap();
    assert!(stored.spec.password.starts_with("$argon2id$"), "{}", stored.spec.password);
}

fn printed_document() -> serde_json::Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kite")).args(["api", "--openapi"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_openapi_document_is_valid_openapi_3_1() {
    let schema: serde_json::Value = serde_json::from_str(include_str!("data/openapi-3.1-schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let document = printed_document();
    let errors: Vec<String> =
        validator.iter_errors(&document).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut ids: Vec<&str> = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values().filter_map(|op| op["operationId"].as_str()))
        .collect();
    let count = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "operation ids are unique");
}

#[test]
fn the_book_links_the_document_the_server_serves() {
    let committed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/api/openapi.json")).unwrap(),
    )
    .unwrap();
    assert!(
        committed == printed_document(),
        "book/src/api/openapi.json differs from what kite api serves; regenerate it: \
         cargo run -p kite-bin -- api --openapi > book/src/api/openapi.json"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_lists_every_route_the_server_answers() {
    let platform = Platform::start().await;
    let (status, document) = platform.anonymous().get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(document["openapi"].as_str().unwrap().starts_with("3."), "{}", document["openapi"]);
    let paths = document["paths"].as_object().unwrap();
    for path in [
        "/health",
        "/config",
        "/auth/signup",
        "/auth/login",
        "/auth/logout",
        "/me",
        "/vms",
        "/vms/{name}",
        "/vms/{name}/start",
        "/vms/{name}/stop",
    ] {
        assert!(paths.contains_key(path), "{path} is documented");
    }
    let (status, config) = platform.anonymous().get("/config").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(config["config"]["images"][0]["ready"], true, "{config}");
    assert_eq!(config["config"]["minDisk"], "20Gi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_domain_prefix_frees_the_old_one_and_holds_the_new_one() {
    let platform = Platform::start().await;
    platform.sign_up("root").await;
    let (amy, bob) = (platform.sign_up("amy").await, platform.sign_up("bob").await);
    platform.set_level(&amy, 1).await;
    platform.set_level(&bob, 1).await;
    let machine = |name: &str, prefix: &str| json!({ "name": name, "sshId": format!("{name}_id"), "sshPassword": "machine-password", "domainPrefix": prefix });
    let (status, answer) = amy.post("/vms", machine("web", "blog")).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let (status, answer) = amy.patch("/vms/web", json!({ "domainPrefix": "news" })).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["vm"]["domainPrefix"], "news", "{answer}");
    let (status, answer) = bob.post("/vms", machine("site", "news")).await;
    assert_eq!(status, StatusCode::CONFLICT, "the new prefix is held: {answer}");
    let (status, answer) = bob.post("/vms", machine("site", "blog")).await;
    assert_eq!(status, StatusCode::CREATED, "the old prefix is free at once: {answer}");
}

/// A key pair made by `ssh-keygen`: its public line, and its fingerprint as `ssh-keygen -l` prints it.
fn ssh_keygen(dir: &std::path::Path, name: &str, kind: &[&str]) -> (String, String) {
    use kite_testkit::openssh::{require, run_bounded, text};
    let path = dir.join(name);
    let mut make = std::process::Command::new(require("ssh-keygen"));
    make.args(kind).args(["-N", "", "-q", "-C", "kim@laptop", "-f"]).arg(&path);
    let made = run_bounded(make, None, std::time::Duration::from_secs(30));
    assert!(made.status.success(), "{}", text(&made.stderr));
    let mut list = std::process::Command::new(require("ssh-keygen"));
    list.arg("-lf").arg(path.with_extension("pub"));
    let listed = text(&run_bounded(list, None, std::time::Duration::from_secs(30)).stdout);
    let fingerprint = listed.split_whitespace().nth(1).unwrap().to_string();
    (std::fs::read_to_string(path.with_extension("pub")).unwrap().trim().to_string(), fingerprint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_adds_and_removes_its_ssh_keys_and_each_refusal_says_why() {
    let platform = Platform::start().await;
    let kim = platform.sign_up("kim").await;
    let dir = tempfile::tempdir().unwrap();
    let (line, fingerprint) = ssh_keygen(dir.path(), "id_ed25519", &["-t", "ed25519"]);
    let (status, keys) = kim.post("/me/ssh-keys", json!({ "key": format!("{line}\n") })).await;
    assert_eq!(status, StatusCode::CREATED, "{keys}");
    assert_eq!(keys[0]["fingerprint"], fingerprint.as_str(), "the fingerprint is ssh-keygen's");
    assert_eq!((keys[0]["kind"].as_str(), keys[0]["comment"].as_str()), (Some("ssh-ed25519"), Some("kim@laptop")));
    assert_eq!(kim.get("/me/ssh-keys").await.1, keys);
    let refused = |status: StatusCode, body: &Value, words: &str| {
        assert!(body["message"].as_str().unwrap_or_default().contains(words), "{status}: {body}");
    };
    let (status, body) = kim.post("/me/ssh-keys", json!({ "key": line.replace("kim@laptop", "other comment") })).await;
    assert_eq!(status, StatusCode::CONFLICT);
    refused(status, &body, "already");
    let (status, body) = kim.post("/me/ssh-keys", json!({ "key": format!("command=\"ls\" {line}") })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    refused(status, &body, "options");
    let (status, body) = kim.post("/me/ssh-keys", json!({ "key": format!("{line}\n{line}") })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    refused(status, &body, "one line");
    let (weak, _) = ssh_keygen(dir.path(), "id_rsa_1024", &["-t", "rsa", "-b", "1024"]);
    let (status, body) = kim.post("/me/ssh-keys", json!({ "key": weak })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    refused(status, &body, "too weak");
    // Another account's list is its own.
    let lee = platform.sign_up("lee").await;
    assert_eq!(lee.get("/me/ssh-keys").await.1, json!([]));
    assert_eq!(platform.anonymous().get("/me/ssh-keys").await.0, StatusCode::UNAUTHORIZED);
    // Removed by its fingerprint (which holds '+', '/' and ':' in a query string).
    let query = form_urlencoded::Serializer::new(String::new()).append_pair("fingerprint", &fingerprint).finish();
    let (status, keys) = kim.delete(&format!("/me/ssh-keys?{query}")).await;
    assert_eq!((status, keys), (StatusCode::OK, json!([])));
    let (status, body) = kim.delete(&format!("/me/ssh-keys?{query}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}
