//! One bounded HTTP(S) GET (the public agent registry): hyper over TCP, rustls (ring provider,
//! webpki's and the system's roots) for `https`, a whole-request deadline, a body limit, and
//! redirects followed a few times, never from `https` to anything else (a registry asked for
//! over `https` must not come from a plain-text hop that anyone on the path can answer).

use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper::header::{HOST, LOCATION, USER_AGENT};
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// Redirects followed.
const MAX_REDIRECTS: usize = 4;

/// What [`get`] fetched: the body, and the URL it came from (after redirects).
pub struct Got {
    pub body: Bytes,
    pub url: String,
}

/// Fetches `url` within `deadline`, its body at most `limit` bytes. A redirect from `https` to
/// anything else is refused.
pub async fn get(url: &str, deadline: Duration, limit: usize) -> Result<Got, String> {
    match tokio::time::timeout(deadline, get_following(url, limit)).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {} s", deadline.as_secs())),
    }
}

async fn get_following(url: &str, limit: usize) -> Result<Got, String> {
    let mut url = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        match get_once(&url, limit).await? {
            Fetched::Body(body) => return Ok(Got { body, url }),
            Fetched::Redirect(to) => {
                redirect_allowed(&url, &to)?;
                url = to;
            }
        }
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

/// A redirect may not leave `https`.
fn redirect_allowed(from: &str, to: &str) -> Result<(), String> {
    let scheme = |u: &str| u.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if scheme(from).as_deref() == Some("https") && scheme(to).as_deref() != Some("https") {
        return Err(format!(
            "{from}: redirected to {to}, which is not https: refused"
        ));
    }
    Ok(())
}

enum Fetched {
    Body(Bytes),
    Redirect(String),
}

async fn get_once(url: &str, limit: usize) -> Result<Fetched, String> {
    let uri: Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(format!("{url}: only http and https URLs")),
    };
    let host = uri
        .host()
        .ok_or_else(|| format!("{url}: no host"))?
        .trim_matches(|c| c == '[' || c == ']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("{host}:{port}: {e}"))?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let request = Request::get(path)
        .header(HOST, uri.authority().map_or(host.as_str(), |a| a.as_str()))
        .header(USER_AGENT, concat!("acp/", env!("CARGO_PKG_VERSION")))
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = if tls {
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| format!("{host}: {e}"))?;
        let config = acp_native::remote::client::tls_config(&Default::default())
            .map_err(|e| e.to_string())?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {host}: {e}"))?;
        send(TokioIo::new(stream), request).await?
    } else {
        send(TokioIo::new(tcp), request).await?
    };
    let status = response.status();
    if status.is_redirection() {
        let to = response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("{url}: {status} without a Location"))?;
        let to: Uri = to.parse().map_err(|e| format!("{url}: redirect: {e}"))?;
        // A relative Location is resolved against this URL.
        let to = if to.scheme().is_some() {
            to.to_string()
        } else {
            format!(
                "{}://{}{}",
                uri.scheme_str().unwrap_or("https"),
                uri.authority().map_or("", |a| a.as_str()),
                to
            )
        };
        return Ok(Fetched::Redirect(to));
    }
    if status != StatusCode::OK {
        return Err(format!("{url}: HTTP {status}"));
    }
    let body = Limited::new(response.into_body(), limit)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                format!("{url}: more than {limit} bytes")
            } else {
                format!("{url}: {e}")
            }
        })?;
    Ok(Fetched::Body(body.to_bytes()))
}

async fn send<T>(
    io: TokioIo<T>,
    request: Request<Empty<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::redirect_allowed;

    #[test]
    fn redirects_never_leave_https() {
        assert!(redirect_allowed("https://a/r.json", "https://b/r.json").is_ok());
        assert!(redirect_allowed("HTTPS://a/r.json", "https://b/r.json").is_ok());
        assert!(redirect_allowed("http://a/r.json", "http://b/r.json").is_ok());
        assert!(redirect_allowed("http://a/r.json", "https://b/r.json").is_ok());
        for to in [
            "http://b/r.json",
            "HTTP://b/r.json",
            "ftp://b/r.json",
            "b/r.json",
        ] {
            let e = redirect_allowed("https://a/r.json", to).unwrap_err();
            assert!(e.contains("not https: refused"), "{e}");
        }
    }
}
