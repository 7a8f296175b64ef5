//! A user journey to load (issue 17): `POST /login` issues a token, `GET /items` and
//! `GET /items/{id}` require it. Stateless: a token is the user's name and a keyed hash of
//! it, so any worker thread can verify one without shared state, and a test knows that a
//! request the server accepted carried a token the server issued. Requests without a valid
//! token get 401 and are counted ([`crate::RunningServer::auth_failures`]).
//!
//! Cookies: `/login` also sets `session=TOKEN`; `GET /me` needs that cookie (403, counted
//! by [`crate::RunningServer::cookie_failures`], without it) and `POST /logout` deletes it
//! (`Max-Age=0`). The users who logged in are counted by name
//! ([`crate::RunningServer::login_users`]), so a test knows which data rows were sent.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, COOKIE, SET_COOKIE};
use hyper::{Request, Response, StatusCode};

use crate::body::ResponseBody;

/// Items `/items` lists (ids 1..=ITEMS).
pub const ITEMS: u64 = 10;
/// Largest login body read.
const MAX_LOGIN_BYTES: usize = 64 * 1024;

/// The keyed hash of a user name (FNV-1a, then a 64-bit finalizer): not a secret worth the
/// name, only a way to tell issued tokens from made-up ones.
fn mac(user: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ 0x6c6f_6164_6d61_726b;
    for b in user.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// The token issued to `user`: `HEX(user).MAC`, only `[0-9a-f.]`, so it fits in a header,
/// a cookie and a URL unchanged.
pub fn token_for(user: &str) -> String {
    let hex: String = user.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.{:016x}", mac(user))
}

fn valid(token: &str) -> bool {
    let Some((hex, m)) = token.split_once('.') else {
        return false;
    };
    if hex.len() % 2 != 0 || hex.is_empty() {
        return false;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    match bytes.and_then(|b| String::from_utf8(b).ok()) {
        Some(user) => format!("{:016x}", mac(&user)) == m,
        None => false,
    }
}

/// Whether the request carries `Authorization: Bearer TOKEN` with an issued token.
pub(crate) fn authorized<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| valid(t.trim()))
}

fn json(status: StatusCode, body: String) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::full(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// 401 for a request without a valid token.
pub(crate) fn unauthorized() -> Response<ResponseBody> {
    json(
        StatusCode::UNAUTHORIZED,
        r#"{"error":"missing or wrong token: send Authorization: Bearer TOKEN from POST /login"}"#
            .into(),
    )
}

/// `GET /items`: every item, as a JSON list.
pub(crate) fn items() -> Response<ResponseBody> {
    let list: Vec<String> = (1..=ITEMS)
        .map(|id| format!(r#"{{"id":{id},"name":"item {id}"}}"#))
        .collect();
    json(
        StatusCode::OK,
        format!(r#"{{"items":[{}]}}"#, list.join(",")),
    )
}

/// `GET /items/{id}`: one item, 404 for an id not listed.
pub(crate) fn item(id: &str) -> Response<ResponseBody> {
    match id.parse::<u64>() {
        Ok(id) if (1..=ITEMS).contains(&id) => json(
            StatusCode::OK,
            format!(r#"{{"id":{id},"name":"item {id}","price":{}}}"#, id * 100),
        ),
        _ => json(
            StatusCode::NOT_FOUND,
            format!(r#"{{"error":"no item {id:?}; ids are 1 to {ITEMS}"}}"#),
        ),
    }
}

/// `POST /login` with `{"user":"NAME"}`: `{"token":"..."}` and a `session` cookie holding
/// the same token; 400 without a user.
pub(crate) async fn login<B>(
    req: Request<B>,
    counters: &crate::server::Counters,
) -> Response<ResponseBody>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let body = match Limited::new(req.into_body(), MAX_LOGIN_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return json(
                StatusCode::PAYLOAD_TOO_LARGE,
                r#"{"error":"login body over 64 KiB"}"#.into(),
            )
        }
    };
    let user = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("user")?.as_str().map(str::to_string))
        .filter(|u| !u.is_empty());
    let Some(user) = user else {
        return json(
            StatusCode::BAD_REQUEST,
            r#"{"error":"send {\"user\":\"NAME\"}"}"#.into(),
        );
    };
    *counters
        .login_users
        .lock()
        .expect("login users")
        .entry(user.clone())
        .or_default() += 1;
    let token = token_for(&user);
    let mut r = json(StatusCode::OK, format!(r#"{{"token":"{token}"}}"#));
    if let Ok(v) = HeaderValue::from_str(&format!("session={token}; Path=/; HttpOnly")) {
        r.headers_mut().insert(SET_COOKIE, v);
    }
    r
}

/// A response that needed the session cookie and did not get a valid one: tagged so the
/// server counts it apart from other 403s (`/status/403`).
#[derive(Clone, Copy)]
pub(crate) struct CookieFailure;

/// `GET /me`: 200 `{"user":"NAME"}` with a valid `session` cookie (from `/login`), else 403;
/// `/me?user=NAME` also refuses another user's cookie (a jar shared between users).
pub(crate) fn me<B>(req: &Request<B>) -> Response<ResponseBody> {
    let session = req
        .headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == "session")
        .map(|(_, value)| value.trim());
    let expected = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("user=")));
    let user = session
        .filter(|t| valid(t))
        .and_then(user_of)
        .filter(|u| expected.is_none_or(|e| e == u));
    match user {
        Some(user) => json(
            StatusCode::OK,
            serde_json::json!({ "user": user }).to_string(),
        ),
        None => {
            let mut r = json(
                StatusCode::FORBIDDEN,
                r#"{"error":"missing or wrong session cookie: send Cookie: session=TOKEN from POST /login (as that user)"}"#.into(),
            );
            r.extensions_mut().insert(CookieFailure);
            r
        }
    }
}

/// `POST /logout`: deletes the session cookie.
pub(crate) fn logout() -> Response<ResponseBody> {
    let mut r = json(StatusCode::OK, r#"{"ok":true}"#.into());
    r.headers_mut().insert(
        SET_COOKIE,
        HeaderValue::from_static("session=; Path=/; Max-Age=0"),
    );
    r
}

/// The user a (valid) token was issued to.
fn user_of(token: &str) -> Option<String> {
    let hex = token.split_once('.')?.0;
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_verify_and_others_do_not() {
        let t = token_for("u17");
        assert!(valid(&t));
        assert!(!valid(&t.replace('.', "")));
        assert!(!valid(&format!("{t}0")));
        assert!(!valid(&token_for("u17").replacen("7", "8", 1)));
        assert!(!valid(""));
        assert!(t.bytes().all(|b| b.is_ascii_hexdigit() || b == b'.'));
        assert_eq!(user_of(&t).as_deref(), Some("u17"));
    }
}
