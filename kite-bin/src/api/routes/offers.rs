//! `vm-offers`: machines an admin granted, and claiming one. The rules are
//! in [`crate::api::offers`].

use crate::api::auth::Caller;
use crate::api::error::{ApiResult, ErrorBody};
use crate::api::json::Body;
use crate::api::machines::envelope;
use crate::api::models::{OfferView, OffersEnvelope, VmEnvelope};
use crate::api::offers::{self, ClaimOffer, is_open};
use crate::api::state::{AppState, by};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

/// Your offers that can still be claimed.
#[utoipa::path(get, path = "/vm-offers", tag = "offers",
    responses((status = 200, body = OffersEnvelope), (status = 401, body = ErrorBody)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Json<OffersEnvelope> {
    let offers = state.offers.find(by::NAMESPACE, caller.namespace());
    let mut offers: Vec<OfferView> =
        offers.iter().filter(|o| is_open(o)).map(|o| OfferView::from(o.as_ref())).collect();
    offers.sort_by(|a, b| a.name.cmp(&b.name));
    Json(OffersEnvelope { offers })
}

/// Claims an offer: creates its machine. Of two claims of one offer, one
/// gets a 409; when the machine cannot be made, the offer stays available.
#[utoipa::path(post, path = "/vm-offers/{name}/claim", tag = "offers", request_body = ClaimOffer, params(("name" = String, Path)),
    responses(
        (status = 201, body = VmEnvelope),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Claimed already, expired, or a name is taken", body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
pub async fn claim(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Body(request): Body<ClaimOffer>,
) -> ApiResult<(StatusCode, Json<VmEnvelope>)> {
    let offer = offers::own(&state, &caller, &name)?;
    let vm = offers::claim(&state, &caller, &offer, request).await?;
    Ok((StatusCode::CREATED, Json(envelope(&state, &vm))))
}
