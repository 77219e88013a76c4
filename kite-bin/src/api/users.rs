//! The users service, as `machines` is for machines: each rule a pure
//! function ([`may_sign_up`], [`may_set_level`]) and each write its own
//! ([`create`], [`set_level`]). The HTTP handlers (`routes/auth.rs`,
//! `routes/admin_users.rs`) only extract, call these and answer.

use crate::api::auth::level_name;
use crate::api::error::ApiError;
use crate::api::reservation::{Claims, Holder, Kind, Refusal};
use crate::api::state::AppState;
use kite_core::api::{AccessLevel, KiteUser, KiteUserSpec, SignupMode, SignupSpec};

/// Whether the account of `email` may sign up under `rules`: `Ok(true)`
/// when it becomes the platform's admin (the admin's email, before there
/// is one), `Ok(false)` for an ordinary account, or the refusal, in a
/// sentence for the person signing up.
pub fn may_sign_up(
    rules: &SignupSpec,
    has_admin: bool,
    first_signup_is_admin: bool,
    email: &str,
) -> Result<bool, ApiError> {
    let becomes_admin = !has_admin && rules.names_admin(email);
    if !has_admin && !becomes_admin && !first_signup_is_admin {
        tracing::warn!("a sign-up was refused: the platform has no admin yet (KitePlatform spec.signup.adminEmail)");
        return Err(ApiError::forbidden(
            "this platform is not open yet: its administrator has not signed up; try again later",
        ));
    }
    if !rules.admits(email) {
        return Err(ApiError::forbidden(match rules.mode {
            SignupMode::Closed => "sign-up is closed on this platform; ask an admin for an account",
            _ => "sign-up here is by invitation; ask an admin to invite your email address",
        }));
    }
    Ok(becomes_admin)
}

/// An account to make, its fields checked.
pub struct Account {
    /// The name to show.
    pub username: String,
    /// The address to sign in with.
    pub email: String,
    /// The password, hashed before it is stored.
    pub password: String,
    /// Whether [`may_sign_up`] found it to be the platform's admin.
    pub becomes_admin: bool,
}

/// Makes the account: its email and username reserved (given back if
/// anything after fails), its level, its password's hash, the `KiteUser`.
pub async fn create(state: &AppState, account: Account) -> Result<KiteUser, ApiError> {
    let Account { username, email, password, becomes_admin } = account;
    let (email_key, username_key) = (email.to_lowercase(), username.to_lowercase());
    let name = format!("ku-{}", uuid::Uuid::new_v4());
    let mut claims = Claims::new(&state.reservations, Holder::User(name.clone()));
    let created = async {
        claims.take(Kind::Email, &email_key).await.map_err(|r| {
            r.answer("reserving an email", "an account with this email already exists; sign in instead")
        })?;
        claims
            .take(Kind::Username, &username_key)
            .await
            .map_err(|r| r.answer("reserving a username", "this username is taken; choose another"))?;
        let level = if becomes_admin {
            AccessLevel::Admin
        } else if state.first_signup_is_admin && state.users.is_empty() {
            match claims.take(Kind::FirstAdmin, "").await {
                Ok(()) => AccessLevel::Admin,
                Err(Refusal::Taken) => AccessLevel::ReadOnly,
                Err(Refusal::Kube(error)) => return Err(ApiError::from_kube("reserving the first admin", error)),
            }
        } else {
            AccessLevel::ReadOnly
        };
        let hash = state.hashing.hash(password).await?;
        let user = KiteUser::new(
            &name,
            KiteUserSpec {
                username: username.clone(),
                email: email.clone(),
                password: hash,
                namespace: format!("kite-user-{name}"),
                profile_image: String::new(),
                access_level: level,
                ssh_authorized_keys: Vec::new(),
                session_generation: 0,
            },
        );
        state.users_write().create(&user).await.map_err(|error| ApiError::from_kube("creating a user", error))
    }
    .await;
    claims.settle(created).await
}

/// Whether a caller of level `caller` may give the user now at `current`
/// the level `wanted`: managers move users between read-only and user
/// only, and nobody changes their own level (`own`).
pub fn may_set_level(
    caller: AccessLevel,
    own: bool,
    current: AccessLevel,
    wanted: AccessLevel,
) -> Result<(), ApiError> {
    if own {
        return Err(ApiError::conflict("you cannot change your own level; ask another admin"));
    }
    if caller < AccessLevel::Admin && (wanted > AccessLevel::User || current > AccessLevel::User) {
        return Err(ApiError::forbidden(format!(
            "a {} may move users between read-only and user only; ask an admin",
            level_name(caller)
        )));
    }
    Ok(())
}

/// Writes the level of the user `object`, and keeps the cache in step.
pub async fn set_level(state: &AppState, object: &str, level: AccessLevel) -> Result<KiteUser, ApiError> {
    let patch = serde_json::json!({ "spec": { "access_level": level.as_u8() } });
    state
        .users_write()
        .merge_patch(object, &patch)
        .await
        .map_err(|error| ApiError::from_kube("changing a level", error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessLevel::{Admin, Manager, ReadOnly, User};

    #[test]
    fn managers_move_users_between_read_only_and_user_only() {
        assert!(may_set_level(Manager, false, ReadOnly, User).is_ok());
        assert!(may_set_level(Manager, false, User, ReadOnly).is_ok());
        assert!(may_set_level(Manager, false, User, Manager).is_err(), "a manager cannot make a manager");
        assert!(may_set_level(Manager, false, Manager, User).is_err(), "nor demote one");
        assert!(may_set_level(Admin, false, Manager, Admin).is_ok());
    }

    #[test]
    fn nobody_changes_their_own_level() {
        assert!(may_set_level(Admin, true, Admin, User).is_err());
    }
}
