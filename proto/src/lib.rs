//! Drover's wire types, generated from `proto/drover.proto`, and `convert`, the one
//! place that maps them to and from the domain model.

#[allow(clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("drover.v1");
}
pub mod convert;

/// A message's bytes, as they travel.
pub fn encode<M: prost::Message>(message: &M) -> Vec<u8> {
    message.encode_to_vec()
}

/// A message from its bytes; `None` when they are not one.
pub fn decode<M: prost::Message + Default>(bytes: &[u8]) -> Option<M> {
    M::decode(bytes).ok()
}

/// The request header that carries a request's `v1::Credential`, encoded (a binary
/// header: base64 on the wire).
pub const CREDENTIAL_HEADER: &str = "drover-credential-bin";
