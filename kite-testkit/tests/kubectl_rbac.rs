//! The real kubectl against `kite-fake-apiserver --authorization-mode RBAC`:
//! HTTPS with the server's CA, the admin's client certificate, a
//! ServiceAccount's token from `kubectl create token`, `kubectl auth
//! whoami`, `kubectl auth can-i` (with `--as` and `--list`), and the API
//! server's exact refusals; a token it did not make is `401`. Each refusal
//! is counted at `/testkit/denials`.

mod common;

use common::kubectl::{Kubectl, fresh, json};

/// A kubectl that authenticates with `token` instead of the admin's
/// certificate, made as a person would: a copy of the kubeconfig, with
/// `kubectl config set-credentials` and `set-context`.
fn as_token(admin: &Kubectl, dir: &std::path::Path, user: &str, token: &str) -> Kubectl {
    let kubeconfig = dir.join(format!("{user}.kubeconfig"));
    std::fs::copy(admin.kubeconfig(), &kubeconfig).unwrap();
    let kubectl = Kubectl::with_kubeconfig(kubeconfig, dir.join(format!("{user}-cache")));
    kubectl.ok(&["config", "set-credentials", user, &format!("--token={token}")]);
    kubectl.ok(&["config", "set-context", "--current", &format!("--user={user}")]);
    kubectl
}

/// A team namespace with a ServiceAccount `robot` that may read ConfigMaps there.
fn team_with_a_reader(admin: &Kubectl) {
    admin.ok(&["create", "namespace", "team"]);
    admin.ok(&["create", "serviceaccount", "robot", "-n", "team"]);
    admin.ok(&["create", "role", "reader", "-n", "team", "--verb=get,list", "--resource=configmaps"]);
    admin.ok(&["create", "rolebinding", "robot-reads", "-n", "team", "--role=reader", "--serviceaccount=team:robot"]);
    admin.ok(&["create", "configmap", "settings", "-n", "team", "--from-literal=colour=blue"]);
}

#[test]
fn the_admin_kubeconfig_is_https_with_a_client_certificate_in_system_masters() {
    let (_dir, _server, admin) = fresh(&["--authorization-mode", "RBAC"]);
    let config = std::fs::read_to_string(admin.kubeconfig()).unwrap();
    assert!(config.contains("server: https://127.0.0.1:"), "{config}");
    assert!(config.contains("certificate-authority-data:") && config.contains("client-certificate-data:"), "{config}");
    assert!(!config.contains("token:"), "the admin authenticates by certificate, not a token: {config}");
    let whoami = json(&admin.ok(&["auth", "whoami", "-o", "json"]));
    assert_eq!(whoami["status"]["userInfo"]["username"], "kubernetes-admin", "{whoami}");
    let groups = whoami["status"]["userInfo"]["groups"].as_array().unwrap();
    assert!(
        groups.iter().any(|g| g == "system:masters") && groups.iter().any(|g| g == "system:authenticated"),
        "{whoami}"
    );
    assert_eq!(admin.ok(&["auth", "can-i", "create", "secrets", "-A"]).trim(), "yes");
}

#[test]
fn a_service_account_token_from_kubectl_create_token_gets_what_its_role_allows_and_nothing_else() {
    let (dir, _server, admin) = fresh(&["--authorization-mode", "RBAC"]);
    team_with_a_reader(&admin);
    let token = admin.ok(&["create", "token", "robot", "-n", "team"]).trim().to_string();
    assert!(token.len() >= 32, "a token, not {token:?}");
    let robot = as_token(&admin, dir.path(), "robot", &token);

    let whoami = json(&robot.ok(&["auth", "whoami", "-o", "json"]));
    assert_eq!(whoami["status"]["userInfo"]["username"], "system:serviceaccount:team:robot");
    let settings = json(&robot.ok(&["get", "configmap", "settings", "-n", "team", "-o", "json"]));
    assert_eq!(settings["data"]["colour"], "blue");

    let (ok, _, error) =
        robot.run(&["create", "secret", "generic", "stolen", "-n", "team", "--from-literal=a=b"], None);
    assert!(!ok);
    assert_eq!(
        error.trim(),
        "error: failed to create secret secrets is forbidden: User \"system:serviceaccount:team:robot\" cannot create resource \"secrets\" in API group \"\" in the namespace \"team\""
    );
    let (ok, _, error) = robot.run(&["get", "configmaps", "-n", "default"], None);
    assert!(!ok);
    assert_eq!(
        error.trim(),
        "Error from server (Forbidden): configmaps is forbidden: User \"system:serviceaccount:team:robot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );

    // kubectl auth can-i, as the account itself and as the admin impersonating it.
    assert_eq!(robot.ok(&["auth", "can-i", "list", "configmaps", "-n", "team"]).trim(), "yes");
    let (ok, answer, _) = robot.run(&["auth", "can-i", "create", "secrets", "-n", "team"], None);
    assert!(!ok && answer.trim() == "no", "{answer}");
    let as_robot = ["--as", "system:serviceaccount:team:robot"];
    assert_eq!(
        admin.ok(&[&["auth", "can-i", "get", "configmaps/settings", "-n", "team"][..], &as_robot].concat()).trim(),
        "yes"
    );
    let (ok, answer, _) =
        admin.run(&[&["auth", "can-i", "delete", "configmaps", "-n", "team"][..], &as_robot].concat(), None);
    assert!(!ok && answer.trim() == "no", "{answer}");

    // kubectl auth can-i --list: the role's rule, and the discovery every account has.
    let list = robot.ok(&["auth", "can-i", "--list", "-n", "team"]);
    let configmaps = list.lines().find(|l| l.starts_with("configmaps ")).unwrap_or_else(|| panic!("{list}"));
    assert!(configmaps.trim_end().ends_with("[get list]"), "{list}");
    assert!(list.lines().any(|l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io")), "{list}");
    assert!(!list.lines().any(|l| l.starts_with("secrets")), "{list}");

    // Impersonation needs the impersonate verb, which the account has not.
    let (ok, _, error) = robot.run(&["get", "namespaces", "--as", "kubernetes-admin"], None);
    assert!(!ok);
    assert_eq!(
        error.trim(),
        "Error from server (Forbidden): users \"kubernetes-admin\" is forbidden: User \"system:serviceaccount:team:robot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );

    // Every refusal is kept with who was refused what.
    let denials = json(&admin.ok(&["get", "--raw", "/testkit/denials"]));
    let denials = denials.as_array().unwrap();
    let refused = |verb: &str, resource: &str| {
        denials
            .iter()
            .any(|d| d["user"] == "system:serviceaccount:team:robot" && d["verb"] == verb && d["resource"] == resource)
    };
    assert!(
        refused("create", "secrets") && refused("list", "configmaps") && refused("impersonate", "users"),
        "{denials:?}"
    );
    assert!(!denials.iter().any(|d| d["user"] == "kubernetes-admin"), "the admin was never refused: {denials:?}");
    let counts = json(&admin.ok(&["get", "--raw", "/testkit/requests"]));
    assert_eq!(counts["denied create secrets"], 1, "{counts}");
    assert!(counts["get configmaps"].as_u64().unwrap() >= 1, "{counts}");
}

#[test]
fn a_token_the_server_did_not_make_is_unauthorized() {
    let (dir, _server, admin) = fresh(&["--authorization-mode", "RBAC"]);
    let stranger = as_token(&admin, dir.path(), "stranger", "not-a-token-this-server-made");
    let (ok, _, error) = stranger.run(&["get", "namespaces"], None);
    assert!(!ok);
    // kubectl's discovery meets the 401 first, and says so in its own words.
    assert!(
        error.trim_end().ends_with(
            "error: You must be logged in to the server (the server has asked for the client to provide credentials)"
        ),
        "{error}"
    );

    // kubectl without credentials asks for a user name on its standard input
    // (none here), so the anonymous user is tested with a kube client in rbac.rs.
}
