//! Durable storage: partition logs (segments + sparse indexes), metadata journal, consumer offsets, the Storage seam.
