//! Client session registration. The session table here is the metadata view
//! (who is logged in, over what, and which groups they belong to); request
//! numbers and cached replies belong to the consensus layer, which also
//! decides evictions and issues the matching `UnregisterClient`.

use super::{Ctx, MetadataState};
use crate::metadata::errors::MetadataError;
use crate::metadata::ids::{ClientId, Ident};
use crate::metadata::ops::{ApplyOutcome, OpKind};
use crate::metadata::user::ClientSession;

impl MetadataState {
    /// Registers a session, or rebinds an existing one (re-login) keeping
    /// its group memberships.
    pub(super) fn register_client(
        &mut self,
        ctx: Ctx,
        op: &OpKind,
    ) -> Result<ApplyOutcome, MetadataError> {
        let OpKind::RegisterClient {
            client,
            user,
            transport,
            address,
            node,
        } = op
        else {
            unreachable!("dispatched by kind");
        };
        if self.users.get(user).is_none() {
            return Err(MetadataError::UserNotFound {
                user: Ident::Id(user.0),
            });
        }
        let registered_at_us = self
            .clients
            .get(client)
            .map_or(ctx.now_us, |c| c.registered_at_us);
        let session = ClientSession {
            id: *client,
            user_id: *user,
            transport: *transport,
            address: address.clone(),
            registered_at_us,
            node: *node,
        };
        self.clients.insert(*client, session);
        Ok(ApplyOutcome::ClientRegistered { client: *client })
    }

    /// Ends a session: it leaves every group (each rebalances) and is removed.
    pub(super) fn unregister_client(
        &mut self,
        client: ClientId,
    ) -> Result<ApplyOutcome, MetadataError> {
        if !self.clients.contains_key(&client) {
            return Err(MetadataError::ClientNotFound { client });
        }
        let groups_left = self.leave_all_groups(client);
        self.clients.remove(&client);
        Ok(ApplyOutcome::ClientUnregistered {
            client,
            groups_left,
        })
    }
}
