//! `grace auth`: an issued key, the principals, a revocation.

use grace::auth::{IssuedKey, PrincipalInfo};

use super::{counted, print_json};

/// A key just issued: shown this once.
pub fn issued_key(issued: &IssuedKey, json: bool) {
    if json {
        print_json(issued);
        return;
    }
    let groups = match issued.groups.is_empty() {
        true => "no group".to_string(),
        false => format!("groups {}", issued.groups.join(", ")),
    };
    println!("{}", issued.key);
    eprintln!(
        "API key for `{}` ({groups}). It is shown only now: GRACE keeps its SHA-256. \
         Send it as `Authorization: Bearer <key>`.",
        issued.name
    );
}

/// The principals, one a line.
pub fn principals(list: &[PrincipalInfo], json: bool) {
    if json {
        print_json(&list);
        return;
    }
    if list.is_empty() {
        println!("no principals yet: `grace auth add-key NAME --groups G1,G2` adds one");
        return;
    }
    for p in list {
        let groups = match p.groups.is_empty() {
            true => "-".to_string(),
            false => p.groups.join(","),
        };
        println!(
            "{:<24} groups {:<30} {}",
            p.name,
            groups,
            counted(p.active_keys, "working key")
        );
    }
}

/// Keys revoked.
pub fn revoked(name: &str, revoked: usize, json: bool) {
    if json {
        print_json(&serde_json::json!({"name": name, "revoked": revoked}));
        return;
    }
    println!(
        "revoked {} of `{name}`: they no longer open anything",
        counted(revoked, "key")
    );
}

/// Audit records, one a line (oldest first).
pub fn audit_records(records: &[grace::audit::Record], json: bool) {
    if json {
        print_json(&records);
        return;
    }
    if records.is_empty() {
        println!("no audit records match");
        return;
    }
    for r in records {
        let mut line = format!(
            "{}  {:<16} {:<8} {:<16}",
            r.at.format("%Y-%m-%dT%H:%M:%SZ"),
            r.principal,
            r.kb,
            serde_json::to_value(r.action)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        );
        if !r.decision.is_empty() {
            line.push_str(&format!(" {}", r.decision));
        }
        if let Some(id) = r.escalation {
            line.push_str(&format!(" #{id}"));
        }
        for d in &r.documents {
            line.push_str(&format!(" {}", super::display_path(d)));
        }
        println!("{}", line.trim_end());
    }
}

/// `grace kb list`.
pub fn kbs(list: &[grace::service::kbs::KbSummary], json: bool) {
    if json {
        print_json(&list);
        return;
    }
    for kb in list {
        let size = match (kb.chunks, &kb.error) {
            (Some(n), _) => counted(n, "chunk"),
            (None, Some(e)) => format!("cannot be read: {e}"),
            (None, None) => "not created yet".to_string(),
        };
        println!("{:<16} {size}", kb.name);
        println!("  collection {} ({})", kb.collection, kb.location);
        println!("  state      {}", kb.state.display());
        println!("  model      {}", kb.model_dir.display());
        let who = |l: &[String]| match l.is_empty() {
            true => "-".to_string(),
            false => l.join(","),
        };
        println!(
            "  roles      ask {}; review {}; admin {}",
            who(&kb.roles.ask),
            who(&kb.roles.review),
            who(&kb.roles.admin)
        );
    }
}

/// `grace kb create|drop` done.
pub fn kb_done(what: &str, name: &str, location: &std::path::Path, json: bool) {
    if json {
        print_json(&serde_json::json!({"name": name, what: true, "collection": location}));
        return;
    }
    println!("{what} knowledge base `{name}` ({})", location.display());
}
