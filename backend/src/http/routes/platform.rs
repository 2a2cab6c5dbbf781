//! `GET /api/platform`: which payment platform takes this backend's payments,
//! so the page can say "sandbox" when nothing it shows is real money (and, in a
//! sandbox demo, whom one can sign in as).

use crate::state::AppState;
use api_types::api::PlatformInfo;
use axum::Json;
use axum::extract::State;

/// 200 `{"platform":"sandbox"|"remote"|"wechatpay"|"alipay","sandbox":bool,"pays_by_qr_code":bool,"methods":["wallet"|"platform",...],"demo_shoppers":[...]}`.
#[utoipa::path(get, path = "/platform", tag = "public",
    responses((status = 200, description = "Which platform takes the payments", body = PlatformInfo)))]
pub async fn platform(State(state): State<AppState>) -> Json<PlatformInfo> {
    let kind = state.platform.kind();
    Json(PlatformInfo {
        platform: kind.as_str().to_owned(),
        sandbox: kind == crate::config::PlatformKind::Sandbox,
        pays_by_qr_code: kind.pays_by_qr_code(),
        methods: kind.payment_methods().to_vec(),
        demo_shoppers: state.demo_shoppers.as_ref().clone(),
    })
}
