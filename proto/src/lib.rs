//! Drover's wire types, generated from `proto/drover.proto`, and `convert`, the one
//! place that maps them to and from the domain model.

#[allow(clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("drover.v1");
}
pub mod convert;
