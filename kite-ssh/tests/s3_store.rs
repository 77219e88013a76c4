//! The S3 store against a real S3-compatible server: moto's, started by
//! each test on a loopback port and killed when the test ends. Events go up
//! in batches and are read back by day, a recording of more than 5 MiB is
//! streamed in parts and read back byte for byte, retention removes whole
//! old days and never today, and flush, close and drop leave nothing
//! unwritten.
//!
//! Needs Python 3 with `pip install 'moto[server]'` (scripts/test.sh
//! installs it); without it these tests fail and say so.

use kite_ssh::audit::{
    AuditArchive, AuditEvent, AuditSink, CastHeader, Event, RecordingAbout, Retention, S3Settings, S3Store,
};
use kite_testkit::moto::{ACCESS_KEY_ID, Moto, SECRET_ACCESS_KEY};
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody, HttpResponse,
    HttpResponseBody, HttpService,
};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest any one test may take, its server's start included.
const TEST_BOUND: Duration = Duration::from_secs(180);

/// What the tests add to moto's server: settings for a bucket, and the bucket itself.
trait MotoBuckets {
    fn settings(&self, bucket: &str, prefix: &str) -> S3Settings;
    fn objects(&self, bucket: &str) -> Arc<dyn ObjectStore>;
}

impl MotoBuckets for Moto {
    fn settings(&self, bucket: &str, prefix: &str) -> S3Settings {
        S3Settings::new(bucket, "us-east-1", ACCESS_KEY_ID, SECRET_ACCESS_KEY)
            .with_endpoint(Some(format!("http://127.0.0.1:{}", self.port)))
            .with_prefix(prefix)
            .with_allow_http(true)
            .with_path_style(true)
    }

    /// The bucket through object_store directly, to plant the past and look at keys.
    fn objects(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        let store = object_store::aws::AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", self.port))
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY_ID)
            .with_secret_access_key(SECRET_ACCESS_KEY)
            .with_allow_http(true)
            .with_http_connector(PlainHttp)
            .build()
            .unwrap();
        Arc::new(store)
    }
}

/// Plain HTTP on loopback for the test's own object_store client.
#[derive(Debug)]
struct PlainHttp;

impl HttpConnector for PlainHttp {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(hyper_util::client::legacy::connect::HttpConnector::new());
        Ok(HttpClient::new(Plain(client)))
    }
}

struct Plain(hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, HttpRequestBody>);

impl std::fmt::Debug for Plain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Plain")
    }
}

#[async_trait::async_trait]
impl HttpService for Plain {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        use http_body_util::BodyExt;
        let response = self.0.request(request).await.map_err(|error| HttpError::new(HttpErrorKind::Request, error))?;
        let (head, body) = response.into_parts();
        let body = body.map_err(|error| HttpError::new(HttpErrorKind::Interrupted, error));
        Ok(HttpResponse::from_parts(head, HttpResponseBody::new(body)))
    }
}

/// Runs a test's body, failing it past [`TEST_BOUND`].
async fn bounded(body: impl Future<Output = ()>) {
    tokio::time::timeout(TEST_BOUND, body).await.expect("the test took longer than its bound");
}

/// The current day (UTC) and the day `days` before it.
fn today() -> String {
    jiff::Timestamp::now().to_string()[..10].to_string()
}

fn days_ago(days: i64) -> String {
    let today: jiff::civil::Date = today().parse().unwrap();
    today.checked_sub(jiff::Span::new().days(days)).unwrap().to_string()
}

fn connection_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A disconnect on `day`, telling itself apart by `seconds`.
fn event(day: &str, connection: &str, seconds: f64) -> AuditEvent {
    AuditEvent {
        time: format!("{day}T08:00:00.000000Z"),
        connection: connection.into(),
        source: "192.0.2.7:40000".parse().unwrap(),
        event: Event::Disconnect { seconds, reason: None },
    }
}

fn seconds(events: &[AuditEvent]) -> Vec<f64> {
    events
        .iter()
        .map(|event| match event.event {
            Event::Disconnect { seconds, .. } => seconds,
            ref other => panic!("not a test event: {other:?}"),
        })
        .collect()
}

/// The keys under `prefix`, sorted.
async fn keys(objects: &dyn ObjectStore, prefix: &str) -> Vec<String> {
    use futures::TryStreamExt;
    let prefix = Path::from(prefix);
    let listed: Vec<_> = objects.list(Some(&prefix)).try_collect().await.unwrap();
    let mut keys: Vec<String> = listed.into_iter().map(|meta| meta.location.to_string()).collect();
    keys.sort();
    keys
}

fn about(connection: &str, channel: u32) -> RecordingAbout {
    RecordingAbout {
        connection: connection.into(),
        channel,
        route: "kite-user-alice/web".into(),
        header: CastHeader {
            width: 80,
            height: 24,
            timestamp: 1_796_457_600,
            command: None,
            term: Some("xterm".into()),
            title: "alice on kite-user-alice/web".into(),
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_go_up_in_batches_by_day_and_flush_close_and_drop_leave_none_behind() {
    let moto = Moto::start();
    bounded(async {
        let bucket = moto.bucket("events");
        let objects = moto.objects(&bucket);
        let (today, yesterday) = (today(), days_ago(1));
        let connection = connection_id();
        let store = S3Store::open(moto.settings(&bucket, "/kite/gateway/")).unwrap();
        assert!(!format!("{:?}", moto.settings(&bucket, "")).contains("kite-test-secret"), "Debug hides the secret");

        // Without a flush, the writer sends what waits every two seconds.
        store.record(&event(&today, &connection, 1.0));
        store.record(&event(&yesterday, &connection, 2.0));
        store.record(&event(&today, &connection, 3.0));
        let started = Instant::now();
        loop {
            let days = store.days().await.unwrap();
            if days == [yesterday.clone(), today.clone()] && store.events(&today).await.unwrap().len() == 2 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(15), "the events were not written by themselves: {days:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!("events written by themselves after {:?}", started.elapsed());

        // An explicit flush writes at once; a day's batches read back in order.
        store.record(&event(&today, &connection, 4.0));
        store.record(&event(&today, &connection, 5.0));
        store.flush().await.unwrap();
        assert_eq!(seconds(&store.events(&today).await.unwrap()), [1.0, 3.0, 4.0, 5.0]);
        assert_eq!(seconds(&store.events(&yesterday).await.unwrap()), [2.0]);
        assert!(store.events(&days_ago(3)).await.unwrap().is_empty(), "a day without events");
        assert!(store.events("../audit").await.unwrap().is_empty(), "not a day");
        let batches = keys(objects.as_ref(), &format!("kite/gateway/audit/{today}")).await;
        // One object per write: the two-second one, the flush, and one more
        // if the tick came between the last two events.
        assert!((2..=3).contains(&batches.len()), "one object per write: {batches:?}");
        assert!(batches.iter().all(|key| key.ends_with(".jsonl")), "{batches:?}");
        assert_eq!(keys(objects.as_ref(), &format!("kite/gateway/audit/{yesterday}")).await.len(), 1);

        // close() writes what is queued before it returns.
        for n in 0..50 {
            store.record(&event(&today, &connection, 100.0 + f64::from(n)));
        }
        store.close().await.unwrap();
        let reader = S3Store::open(moto.settings(&bucket, "kite/gateway")).unwrap();
        let kept = seconds(&reader.events(&today).await.unwrap());
        assert_eq!(kept.len(), 54, "{kept:?}");
        assert_eq!(kept[4..], (0..50).map(|n| 100.0 + f64::from(n)).collect::<Vec<_>>()[..]);

        // So does dropping the store, with no flush of any kind before.
        let dropped = S3Store::open(moto.settings(&bucket, "kite/gateway")).unwrap();
        for n in 0..20 {
            dropped.record(&event(&today, &connection, 200.0 + f64::from(n)));
        }
        drop(dropped);
        let kept = seconds(&reader.events(&today).await.unwrap());
        assert_eq!(kept.len(), 74, "dropping the store lost events: {kept:?}");

        // A store whose bucket does not exist says so when flushed.
        let broken = S3Store::open(moto.settings("no-such-bucket", "")).unwrap();
        broken.record(&event(&today, &connection, 1.0));
        let error = broken.flush().await.expect_err("a flush to a missing bucket succeeded");
        assert!(error.to_string().starts_with("audit store:"), "{error}");
        assert!(broken.days().await.is_err(), "listing a missing bucket succeeded");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_recording_is_streamed_in_parts_and_read_back_byte_for_byte() {
    let moto = Moto::start();
    bounded(async {
        let bucket = moto.bucket("recordings");
        let objects = moto.objects(&bucket);
        let store = S3Store::open(moto.settings(&bucket, "")).unwrap().recording_sessions(false);
        let connection = connection_id();

        let mut writer = AuditSink::recording(&store, &about(&connection, 3)).expect("the store records sessions");
        assert!(!writer.wants_input(), "input is not recorded unless asked");
        // About 12 MiB of lines, each different, with characters of every width.
        let mut expected = Vec::new();
        let mut n = 0u64;
        while expected.len() < 12 * 1024 * 1024 {
            let line = format!("[{n}.5, \"o\", \"{} é€𝄞 {}\"]", "x".repeat((n % 997) as usize), n * 7919);
            writer.line(&line);
            expected.extend_from_slice(line.as_bytes());
            expected.push(b'\n');
            n += 1;
        }
        // Streamed while it runs: two full parts are up before it ends, and
        // S3 shows no object until the upload is complete.
        let key = format!("recordings/{}/{connection}-3.cast", today());
        let started = Instant::now();
        loop {
            let uploads = moto.http("GET", &format!("/{bucket}?uploads")).unwrap_or_default();
            let upload = uploads.split("<UploadId>").nth(1).and_then(|rest| rest.split("</UploadId>").next());
            let parts = upload
                .and_then(|id| moto.http("GET", &format!("/{bucket}/{key}?uploadId={id}")))
                .map_or(0, |listed| listed.matches("<Part>").count());
            if parts == 2 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the parts were not sent while recording: {uploads}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        store.flush().await.unwrap();
        assert_eq!(recording_of(&store, &connection, 3).await, None, "an unfinished upload is no object");

        drop(writer);
        store.flush().await.unwrap();
        let kept = recording_of(&store, &connection, 3).await.expect("the recording was kept");
        assert_eq!(kept.len(), expected.len());
        assert!(kept == expected, "the recording read back is not what was written");
        let meta = objects.head(&Path::from(key)).await.unwrap();
        let e_tag = meta.e_tag.unwrap_or_default();
        assert!(e_tag.trim_matches('"').ends_with("-3"), "not a multipart upload of three parts: {e_tag}");

        // What was never recorded, and ids that are not the router's.
        assert_eq!(recording_of(&store, &connection, 4).await, None);
        assert_eq!(recording_of(&store, &connection_id(), 3).await, None);
        assert_eq!(recording_of(&store, "../recordings", 3).await, None);
        assert_eq!(recording_of(&store, &connection.to_uppercase(), 3).await, None);

        // A store not told to record keeps no recording.
        let unrecorded = S3Store::open(moto.settings(&bucket, "")).unwrap();
        assert!(AuditSink::recording(&unrecorded, &about(&connection_id(), 0)).is_none());
        let with_input = S3Store::open(moto.settings(&bucket, "")).unwrap().recording_sessions(true);
        assert!(
            AuditSink::recording(&with_input, &about(&connection_id(), 0)).is_some_and(|writer| writer.wants_input())
        );
        with_input.close().await.unwrap();
    })
    .await;
}

/// Reads a recording through [`AuditArchive`], failing the test on an error.
async fn recording_of(store: &S3Store, connection: &str, channel: u32) -> Option<Vec<u8>> {
    AuditArchive::recording(store, connection, channel).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_removes_whole_old_days_by_age_and_size_but_never_today() {
    let moto = Moto::start();
    bounded(async {
        let bucket = moto.bucket("retention");
        let objects = moto.objects(&bucket);
        let connection = connection_id();
        let days = [days_ago(100), days_ago(40), days_ago(5), days_ago(1), today()];
        // The past, planted: each day two batches of one event and a 100-byte recording.
        let line = format!("{}\n", serde_json::to_string(&event(&today(), &connection, 1.0)).unwrap());
        let day_bytes = 2 * line.len() as u64 + 100;
        for day in &days {
            for batch in ["a", "b"] {
                let line = format!("{}\n", serde_json::to_string(&event(day, &connection, 1.0)).unwrap());
                let key = Path::from(format!("kite/audit/{day}/{batch}.jsonl"));
                objects.put(&key, PutPayload::from(line)).await.unwrap();
            }
            let key = Path::from(format!("kite/recordings/{day}/{connection}-0.cast"));
            objects.put(&key, PutPayload::from(vec![b'o'; 100])).await.unwrap();
        }
        objects.put(&Path::from("kite/audit/notes/readme.txt"), PutPayload::from("not a day")).await.unwrap();
        objects.put(&Path::from("elsewhere/audit/2000-01-01/a.jsonl"), PutPayload::from("x")).await.unwrap();

        // By age: days older than 30 days go, their recordings with them.
        let limits = Retention::default().with_max_age(Some(Duration::from_secs(30 * 86_400)));
        let store = S3Store::open(moto.settings(&bucket, "kite")).unwrap().retention(limits);
        store.flush().await.unwrap();
        assert_eq!(store.days().await.unwrap(), days[2..]);
        assert!(store.events(&days[0]).await.unwrap().is_empty());
        assert_eq!(recording_of(&store, &connection, 0).await.map(|cast| cast.len()), Some(100), "today's");
        let recordings = keys(objects.as_ref(), "kite/recordings").await;
        assert_eq!(recordings.len(), 3, "{recordings:?}");
        assert!(recordings.iter().all(|key| !key.contains(&days[0]) && !key.contains(&days[1])), "{recordings:?}");
        assert_eq!(keys(objects.as_ref(), "kite/audit/notes").await.len(), 1, "what is not a day's stays");
        assert_eq!(keys(objects.as_ref(), "elsewhere").await.len(), 1, "what is outside the prefix stays");
        store.close().await.unwrap();

        // By size: three days over one and a half, the oldest go until it fits.
        let limits = Retention::default().with_max_bytes(Some(day_bytes + day_bytes / 2));
        let store = S3Store::open(moto.settings(&bucket, "kite")).unwrap().retention(limits);
        store.flush().await.unwrap();
        assert_eq!(store.days().await.unwrap(), [today()], "three days down to one");
        assert_eq!(seconds(&store.events(&today()).await.unwrap()), [1.0, 1.0], "today's two batches");
        store.close().await.unwrap();

        // Today stays, even over the limit.
        let limits = Retention::default().with_max_age(Some(Duration::ZERO)).with_max_bytes(Some(1));
        let store = S3Store::open(moto.settings(&bucket, "kite")).unwrap().retention(limits);
        store.flush().await.unwrap();
        assert_eq!(store.days().await.unwrap(), [today()]);
        assert_eq!(keys(objects.as_ref(), &format!("kite/recordings/{}", today())).await.len(), 1);
        store.close().await.unwrap();
    })
    .await;
}
