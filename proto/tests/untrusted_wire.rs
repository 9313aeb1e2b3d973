//! Whatever bytes a client sends: decoding them as a request and mapping it to the
//! domain (`proto::convert`) ends in a value or an error, never a panic. Inputs are
//! arbitrary bytes, and real requests with bytes of their encoding changed.

use proptest::prelude::*;
use proto::v1;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2000,
        ..ProptestConfig::default()
    }
}

/// A submit request that means something, encoded.
fn sample_submit() -> Vec<u8> {
    proto::encode(&v1::SubmitJobRequest {
        spec: Some(v1::JobSpec {
            name: "train".into(),
            uid: 1000,
            script: "#!/bin/sh\ntrue\n".into(),
            partition: "gpu".into(),
            time_limit_min: 60,
            env: vec![v1::EnvVar {
                name: "PATH".into(),
                value: "/bin".into(),
            }],
            array: Some(v1::ArraySpec {
                task_ids: vec![1, 2, 3],
                max_running: 2,
            }),
            mail_types: vec![1, 2],
            ..Default::default()
        }),
        test_only: false,
        het_components: Vec::new(),
    })
}

/// `bytes` with some of them changed.
fn mutated(bytes: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = bytes.len();
    proptest::collection::vec((0..len, any::<u8>()), 1..8).prop_map(move |edits| {
        let mut out = bytes.clone();
        for (at, b) in edits {
            out[at] = b;
        }
        out
    })
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        mutated(sample_submit()),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_submit_maps_to_a_job_or_an_error(b in bytes()) {
        if let Some(req) = proto::decode::<v1::SubmitJobRequest>(&b)
            && let Some(spec) = req.spec
        {
            let _ = proto::convert::spec_from_wire(spec);
        }
    }

    #[test]
    fn any_listing_update_or_reservation_change_maps_or_is_refused(b in bytes()) {
        if let Some(req) = proto::decode::<v1::ListJobsRequest>(&b) {
            let _ = proto::convert::listing_filter_from_wire(&req);
        }
        if let Some(req) = proto::decode::<v1::UpdateJobRequest>(&b) {
            for change in req.changes {
                let _ = proto::convert::job_change_from_wire(change);
            }
        }
        if let Some(req) = proto::decode::<v1::ChangeReservationRequest>(&b)
            && let Some(change) = req.change
        {
            let _ = proto::convert::reservation_change_from_wire(change);
        }
        let _ = proto::decode::<v1::Credential>(&b);
        let _ = proto::decode::<v1::StepGrant>(&b);
    }
}
