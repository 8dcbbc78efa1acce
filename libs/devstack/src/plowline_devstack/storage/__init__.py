"""The Cloud Storage stand-in: gcp-storage-emulator with plowline's fidelity corrections."""
