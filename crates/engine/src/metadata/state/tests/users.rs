use super::*;
use crate::metadata::permissions::GlobalPermissions;

fn token(name: &str, expires_at_us: Option<u64>, max_tokens_per_user: u32) -> OpKind {
    OpKind::CreatePersonalAccessToken {
        name: name.to_owned(),
        token_hash: format!("hash-{name}"),
        expires_at_us,
        max_tokens_per_user,
    }
}

fn user_admin() -> Option<Permissions> {
    let global = GlobalPermissions {
        manage_users: true,
        ..GlobalPermissions::default()
    };
    Some(Permissions {
        global,
        streams: Default::default(),
    })
}

#[test]
fn given_users_when_deleting_and_creating_should_reuse_lowest_free_id() {
    let mut h = Harness::new();
    assert_eq!(
        h.ok(create_user("alice", None)),
        ApplyOutcome::UserCreated { user: UserId(1) }
    );
    h.ok(create_user("bob", None));
    h.ok(OpKind::DeleteUser {
        user: name("alice"),
    });
    assert_eq!(
        h.ok(create_user("carol", None)),
        ApplyOutcome::UserCreated { user: UserId(1) }
    );
    assert_eq!(h.code(create_user("bob", None)), 46);
    assert_eq!(h.code(create_user("bo", None)), 43);
    assert_eq!(
        h.code(OpKind::DeleteUser {
            user: name("nobody")
        }),
        20
    );
}

#[test]
fn given_root_when_deleting_or_changing_permissions_should_refuse() {
    let mut h = Harness::new();
    assert_eq!(h.code(OpKind::DeleteUser { user: id(0) }), 48);
    assert_eq!(
        h.code(OpKind::UpdatePermissions {
            user: name("root"),
            permissions: None
        }),
        49
    );
    h.ok(create_user("admin", user_admin()));
    assert_eq!(h.code_as(UserId(1), OpKind::DeleteUser { user: id(0) }), 48);
}

#[test]
fn given_update_user_when_renaming_should_keep_usernames_unique() {
    let mut h = Harness::new();
    h.ok(create_user("alice", None));
    h.ok(create_user("bob", None));
    let clash = OpKind::UpdateUser {
        user: name("bob"),
        username: Some("alice".into()),
        status: None,
    };
    assert_eq!(h.code(clash), 46);
    let rename = OpKind::UpdateUser {
        user: name("bob"),
        username: Some("robert".into()),
        status: Some(UserStatus::Inactive),
    };
    h.ok(rename);
    let robert = h.state.user_by_username("robert").expect("renamed");
    assert_eq!(
        (robert.id, robert.status),
        (UserId(2), UserStatus::Inactive)
    );
    assert!(h.state.user_by_username("bob").is_none());
}

#[test]
fn given_permissions_when_managing_users_should_require_manage_users_or_self() {
    let mut h = Harness::new();
    h.ok(create_user("admin", user_admin()));
    h.ok(create_user("plain", None));
    let (admin, plain) = (UserId(1), UserId(2));
    assert!(h.apply_as(admin, create_user("third", None)).is_ok());
    assert_eq!(h.code_as(plain, create_user("fourth", None)), 41);
    let own = OpKind::ChangePassword {
        user: id(2),
        new_password_hash: "new".into(),
    };
    assert!(h.apply_as(plain, own).is_ok());
    assert_eq!(
        h.state.user(plain).map(|u| u.password_hash.as_str()),
        Some("new")
    );
    let other = OpKind::ChangePassword {
        user: id(1),
        new_password_hash: "x".into(),
    };
    assert_eq!(h.code_as(plain, other), 41);
    let grant = OpKind::UpdatePermissions {
        user: id(2),
        permissions: user_admin(),
    };
    assert_eq!(h.code_as(plain, grant.clone()), 41);
    assert!(h.apply_as(admin, grant).is_ok());
    assert!(
        h.state
            .is_allowed(plain, crate::metadata::permissions::Action::ManageUsers)
    );
}

#[test]
fn given_tokens_when_creating_should_enforce_name_uniqueness_limit_and_expiry() {
    let mut h = Harness::new();
    h.ok(create_user("alice", None));
    let alice = UserId(1);
    assert!(h.apply_as(alice, token("ci-token", None, 2)).is_ok());
    assert_eq!(h.code_as(alice, token("ci-token", None, 2)), 51);
    assert_eq!(h.code_as(alice, token("ab", None, 2)), 50);
    assert_eq!(h.code_as(alice, token("expired", Some(h.now_us), 2)), 56);
    assert!(
        h.apply_as(alice, token("second", Some(u64::MAX - 1), 2))
            .is_ok()
    );
    assert_eq!(h.code_as(alice, token("third", None, 2)), 52);
    // Root's tokens are separate.
    h.ok(token("ci-token", None, 2));
    assert_eq!(h.state.tokens_of(alice).count(), 2);
    let found = h.state.find_token_by_hash("hash-second").expect("by hash");
    assert_eq!((found.user_id, found.name.as_str()), (alice, "second"));
}

#[test]
fn given_tokens_when_deleting_should_remove_own_and_report_missing() {
    let mut h = Harness::new();
    h.ok(create_user("alice", None));
    let alice = UserId(1);
    assert!(h.apply_as(alice, token("mine", None, 10)).is_ok());
    assert_eq!(
        h.code(OpKind::DeletePersonalAccessToken {
            name: "mine".into()
        }),
        20
    );
    assert!(
        h.apply_as(
            alice,
            OpKind::DeletePersonalAccessToken {
                name: "mine".into()
            }
        )
        .is_ok()
    );
    assert_eq!(h.state.tokens_of(alice).count(), 0);
}

#[test]
fn given_expired_tokens_when_cleaning_should_remove_only_those_due() {
    let mut h = Harness::new();
    h.ok(create_user("alice", None));
    let due = h.now_us + 5;
    assert!(h.apply_as(UserId(1), token("soon", Some(due), 10)).is_ok());
    assert!(
        h.apply_as(UserId(1), token("later", Some(due + 100), 10))
            .is_ok()
    );
    assert!(h.apply_as(UserId(1), token("never", None, 10)).is_ok());
    h.now_us = due - 1;
    let outcome = h.ok(OpKind::DeleteExpiredPersonalAccessTokens);
    assert_eq!(outcome, ApplyOutcome::ExpiredTokensDeleted { count: 1 });
    let left: Vec<_> = h
        .state
        .tokens_of(UserId(1))
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(left, vec!["later".to_owned(), "never".to_owned()]);
}

#[test]
fn given_deleted_user_when_its_tokens_are_looked_up_should_be_gone() {
    let mut h = Harness::new();
    h.ok(create_user("alice", None));
    assert!(h.apply_as(UserId(1), token("mine", None, 10)).is_ok());
    h.ok(OpKind::DeleteUser { user: id(1) });
    assert!(h.state.find_token_by_hash("hash-mine").is_none());
}
