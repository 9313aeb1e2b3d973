//! `scontrol create|update partition` words (Slurm's `Key=Value` fields of a
//! partition) and how they change a [`Partition`]. The controller parses them once,
//! with the state's node names at hand for `Nodes=ALL` and unknown hosts.

use crate::config::{OverSubscribe, Partition, PartitionState};
use crate::{hostlist, units};

/// One field a change sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionField {
    /// A hostlist expression or `ALL`.
    Nodes(String),
    /// Minutes; `None`: UNLIMITED.
    MaxTime(Option<u32>),
    DefaultTime(Option<u32>),
    MaxNodes(u32),
    State(PartitionState),
    Default(bool),
    PriorityJobFactor(u32),
    PriorityTier(u32),
    AllowAccounts(Vec<String>),
    DenyAccounts(Vec<String>),
    AllowQos(Vec<String>),
    DenyQos(Vec<String>),
    AllowGroups(Vec<String>),
    OverSubscribe(OverSubscribe),
}

/// A partition's name and the fields to set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionChange {
    pub name: String,
    pub fields: Vec<PartitionField>,
}

/// Why words are refused, in scontrol's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionChangeError {
    #[error("No PartitionName was specified")]
    NoName,
    #[error("Update of this parameter is not supported: {0}")]
    Unsupported(String),
    #[error("Invalid input: {0}")]
    Invalid(String),
    #[error("Invalid node name specified")]
    UnknownNode,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// An Allow list: `ALL` lifts the restriction (no list), as Slurm's controller takes it.
fn allow_list(v: &str) -> Vec<String> {
    if v.eq_ignore_ascii_case("ALL") {
        Vec::new()
    } else {
        list(v)
    }
}

fn number(word: &str, v: &str) -> Result<u32, PartitionChangeError> {
    if v.eq_ignore_ascii_case("unlimited") || v.eq_ignore_ascii_case("infinite") {
        return Ok(0);
    }
    v.parse()
        .map_err(|_| PartitionChangeError::Invalid(word.to_string()))
}

fn yes_no(word: &str, v: &str) -> Result<bool, PartitionChangeError> {
    if v.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err(PartitionChangeError::Invalid(word.to_string()))
    }
}

fn time(word: &str, v: &str) -> Result<Option<u32>, PartitionChangeError> {
    units::parse_time_limit(v).map_err(|_| PartitionChangeError::Invalid(word.to_string()))
}

/// Parses `PartitionName=x Key=Value...` (keys case-insensitive, as scontrol takes
/// them; `Partition=` names it too).
pub fn parse(words: &[String]) -> Result<PartitionChange, PartitionChangeError> {
    let mut change = PartitionChange::default();
    for word in words {
        let Some((key, v)) = word.split_once('=') else {
            return Err(PartitionChangeError::Unsupported(word.clone()));
        };
        let key = key.to_ascii_lowercase();
        let field = match key.as_str() {
            "partitionname" | "partition" => {
                change.name = v.to_string();
                continue;
            }
            "nodes" => PartitionField::Nodes(v.to_string()),
            "maxtime" => PartitionField::MaxTime(time(word, v)?),
            "defaulttime" => PartitionField::DefaultTime(time(word, v)?),
            "maxnodes" => PartitionField::MaxNodes(number(word, v)?),
            // Drover keeps no least node count for a partition: taken, as 1 is.
            "minnodes" => {
                number(word, v)?;
                continue;
            }
            "state" => PartitionField::State(
                PartitionState::parse(v)
                    .ok_or_else(|| PartitionChangeError::Invalid(word.clone()))?,
            ),
            "default" => PartitionField::Default(yes_no(word, v)?),
            "priority" => PartitionField::PriorityJobFactor(number(word, v)?),
            "priorityjobfactor" => PartitionField::PriorityJobFactor(number(word, v)?),
            "prioritytier" => PartitionField::PriorityTier(number(word, v)?),
            // Slurm takes the singular too (a prefix of the keyword).
            "allowaccounts" | "allowaccount" => PartitionField::AllowAccounts(allow_list(v)),
            "denyaccounts" | "denyaccount" => PartitionField::DenyAccounts(list(v)),
            "allowqos" => PartitionField::AllowQos(allow_list(v)),
            "denyqos" => PartitionField::DenyQos(list(v)),
            "allowgroups" | "allowgroup" => PartitionField::AllowGroups(allow_list(v)),
            // `YES:4`, `FORCE:2`: neither the job count after the colon nor FORCE
            // (taken as YES) matters to Drover, which never shares CPUs.
            "oversubscribe" | "shared" => {
                let value = v.split(':').next().unwrap_or_default();
                let value = if value.eq_ignore_ascii_case("FORCE") {
                    "YES"
                } else {
                    value
                };
                PartitionField::OverSubscribe(
                    OverSubscribe::parse(value)
                        .ok_or_else(|| PartitionChangeError::Invalid(word.clone()))?,
                )
            }
            _ => return Err(PartitionChangeError::Unsupported(word.clone())),
        };
        // Slurm's Priority sets both the job factor and the tier.
        if let ("priority", PartitionField::PriorityJobFactor(n)) = (key.as_str(), &field) {
            change.fields.push(PartitionField::PriorityTier(*n));
        }
        change.fields.push(field);
    }
    if change.name.is_empty() {
        return Err(PartitionChangeError::NoName);
    }
    Ok(change)
}

impl PartitionChange {
    /// Sets the fields on `p`; `all_nodes` are the cluster's node names, which `Nodes`
    /// must name (`ALL`: every one).
    pub fn apply_to(
        &self,
        p: &mut Partition,
        all_nodes: &[String],
    ) -> Result<(), PartitionChangeError> {
        for field in &self.fields {
            match field {
                PartitionField::Nodes(expr) => {
                    p.nodes = if expr.eq_ignore_ascii_case("all") {
                        all_nodes.to_vec()
                    } else if expr.is_empty() {
                        Vec::new()
                    } else {
                        let names = hostlist::expand(expr)
                            .map_err(|_| PartitionChangeError::UnknownNode)?;
                        if names.iter().any(|n| !all_nodes.contains(n)) {
                            return Err(PartitionChangeError::UnknownNode);
                        }
                        names
                    };
                }
                PartitionField::MaxTime(t) => p.max_time_min = *t,
                PartitionField::DefaultTime(t) => p.default_time_min = *t,
                PartitionField::MaxNodes(n) => p.max_nodes = *n,
                PartitionField::State(s) => p.state = *s,
                PartitionField::Default(d) => p.is_default = *d,
                PartitionField::PriorityJobFactor(n) => p.priority_job_factor = *n,
                PartitionField::PriorityTier(n) => p.priority_tier = *n,
                PartitionField::AllowAccounts(l) => p.allow_accounts = l.clone(),
                PartitionField::DenyAccounts(l) => p.deny_accounts = l.clone(),
                PartitionField::AllowQos(l) => p.allow_qos = l.clone(),
                PartitionField::DenyQos(l) => p.deny_qos = l.clone(),
                PartitionField::AllowGroups(l) => p.allow_groups = l.clone(),
                PartitionField::OverSubscribe(o) => p.oversubscribe = *o,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn scontrol_create_partition_words() {
        let c = parse(&words(
            "PartitionName=p1 Nodes=node[1-2] MaxTime=30 Default=NO State=DOWN",
        ))
        .unwrap();
        let all: Vec<String> = ["node1", "node2", "node3"].map(String::from).to_vec();
        let mut p = Partition::open("p1", Vec::new(), false);
        c.apply_to(&mut p, &all).unwrap();
        assert_eq!(p.nodes, ["node1", "node2"]);
        assert_eq!(p.max_time_min, Some(30));
        assert_eq!(p.state, PartitionState::Down);
        let c = parse(&words(
            "partition=p2 nodes=ALL maxtime=unlimited priority=2",
        ))
        .unwrap();
        c.apply_to(&mut p, &all).unwrap();
        assert_eq!(p.nodes.len(), 3);
        assert_eq!(p.max_time_min, None);
        assert_eq!((p.priority_job_factor, p.priority_tier), (2, 2));
        let c = parse(&words("PartitionName=p2 AllowQos=ALL")).unwrap();
        c.apply_to(&mut p, &all).unwrap();
        assert!(p.allow_qos.is_empty(), "ALL is no restriction");
        // The singular, as Slurm's scontrol takes it.
        let c = parse(&words("PartitionName=p2 AllowAccount=a,b DenyAccount=c")).unwrap();
        c.apply_to(&mut p, &all).unwrap();
        assert_eq!(
            (&p.allow_accounts, &p.deny_accounts),
            (&vec!["a".to_string(), "b".into()], &vec!["c".to_string()])
        );
        let c = parse(&words("PartitionName=p2 DenyQos=low AllowGroups=wheel,ml")).unwrap();
        c.apply_to(&mut p, &all).unwrap();
        assert_eq!(p.deny_qos, ["low"]);
        assert!(!p.allows_qos("low") && p.allows_qos("normal"));
        assert_eq!(p.allow_groups, ["wheel", "ml"]);
        let member_of = |g: &[&str]| g.iter().map(|g| g.to_string()).collect::<Vec<_>>();
        assert!(p.allows_user(1000, &member_of(&["users", "ml"])));
        assert!(!p.allows_user(1000, &member_of(&["users"])));
        assert!(p.allows_user(0, &[]), "root always may");
        let c = parse(&words("PartitionName=p2 AllowGroups=ALL")).unwrap();
        c.apply_to(&mut p, &all).unwrap();
        assert!(p.allows_user(1000, &[]), "ALL is no restriction");
    }

    #[test]
    fn bad_words_are_refused_in_scontrols_words() {
        assert_eq!(
            parse(&words("Nodes=node1")),
            Err(PartitionChangeError::NoName)
        );
        assert_eq!(
            parse(&words("PartitionName=p Color=red"))
                .unwrap_err()
                .to_string(),
            "Update of this parameter is not supported: Color=red"
        );
        assert!(parse(&words("PartitionName=p State=SIDEWAYS")).is_err());
        let c = parse(&words("PartitionName=p Nodes=nosuch1")).unwrap();
        let mut p = Partition::open("p", Vec::new(), false);
        assert_eq!(
            c.apply_to(&mut p, &["node1".into()]),
            Err(PartitionChangeError::UnknownNode)
        );
    }
}
