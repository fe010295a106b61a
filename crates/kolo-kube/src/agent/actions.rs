//! `/actions`: the agent's bounded history of QoS actions
//! ([`kolo_agent::history`]) as JSON, read-only, on the agent's `--listen`
//! address beside `/metrics`. `kolo why` reads it.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use kolo_agent::history::{ActionHistory, HistoryView};

/// The path.
pub const ACTIONS_PATH: &str = "/actions";

/// `GET /actions`, answered from `history`, to merge into the health router.
pub fn router(history: Arc<Mutex<ActionHistory>>) -> Router {
    Router::new().route(ACTIONS_PATH, get(actions)).with_state(history)
}

async fn actions(State(history): State<Arc<Mutex<ActionHistory>>>) -> Json<HistoryView> {
    Json(history.lock().unwrap_or_else(|p| p.into_inner()).view())
}
