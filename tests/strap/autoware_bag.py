"""Autoware-like ROS 2 recordings for tests, written with rosbags' serializer from the public
Autoware message definitions in ``fixtures/autoware_msgs`` (plus rosbags' ROS 2 Humble
standard types); rosbags' MCAP storage embeds every definition in the schema records.

Scenario (10 Hz, ``duration_s``): the ego cruises towards a signalized junction, the light is
red from 3 s to 6 s (the planned trajectory and the control command stop the ego), a car is
perceived ahead throughout, a pedestrian from 4 s to 6 s; then green, the ego accelerates.
"""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).with_name("fixtures") / "autoware_msgs"
TOPICS = {
    "/perception/object_recognition/objects": "autoware_perception_msgs/msg/PredictedObjects",
    "/perception/traffic_light_recognition/traffic_signals": "autoware_perception_msgs/msg/TrafficLightGroupArray",
    "/localization/kinematic_state": "nav_msgs/msg/Odometry",
    "/planning/scenario_planning/trajectory": "autoware_planning_msgs/msg/Trajectory",
    "/control/command/control_cmd": "autoware_control_msgs/msg/Control",
}


def autoware_typestore():
    """ROS 2 Humble standard types + the Autoware definitions of the fixtures."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    types = {}
    for msg in sorted(FIXTURES.glob("*/msg/*.msg")):
        types.update(get_types_from_msg(msg.read_text(), f"{msg.parent.parent.name}/msg/{msg.stem}"))
    store.register(types)
    return store


def write_autoware_bag(out_dir: Path, duration_s: float = 10.0, topics: dict[str, str] | None = None,
                       storage: str = "mcap") -> Path:
    """A rosbag2 directory (MCAP storage by default) of the scenario above; returns it."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = autoware_typestore()
    T = store.types  # noqa: N806 - message classes by name
    topics = TOPICS if topics is None else topics
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3

    def time(t_s: float):
        return T["builtin_interfaces/msg/Time"](sec=int(t_s), nanosec=int(round((t_s % 1) * 1e9)))

    def header(t_s: float):
        return T["std_msgs/msg/Header"](stamp=time(t_s), frame_id="map")

    import numpy as np

    def pose(x: float):
        return T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=x, y=0.0, z=0.0),
                                           orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0))

    def vec(x: float):
        return T["geometry_msgs/msg/Vector3"](x=x, y=0.0, z=0.0)

    cov = np.zeros(36, np.float64)

    def obj(label: int, x: float, v: float, a: float):
        kin = T["autoware_perception_msgs/msg/PredictedObjectKinematics"](
            initial_pose_with_covariance=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose(x), covariance=cov),
            initial_twist_with_covariance=T["geometry_msgs/msg/TwistWithCovariance"](
                twist=T["geometry_msgs/msg/Twist"](linear=vec(v), angular=vec(0.0)), covariance=cov),
            initial_acceleration_with_covariance=T["geometry_msgs/msg/AccelWithCovariance"](
                accel=T["geometry_msgs/msg/Accel"](linear=vec(a), angular=vec(0.0)), covariance=cov),
            predicted_paths=[])
        return T["autoware_perception_msgs/msg/PredictedObject"](
            object_id=T["unique_identifier_msgs/msg/UUID"](uuid=np.zeros(16, np.uint8)), existence_probability=0.9,
            classification=[T["autoware_perception_msgs/msg/ObjectClassification"](label=label, probability=0.9)],
            kinematics=kin, shape=T["autoware_perception_msgs/msg/Shape"](
                type=0, footprint=T["geometry_msgs/msg/Polygon"](points=[]), dimensions=vec(4.0)))

    def messages(t: float):
        red = 3.0 <= t < 6.0
        ego_v = 0.0 if 4.0 <= t < 6.0 else (8.0 if t < 3.0 else 3.0)
        accel = -3.0 if 3.0 <= t < 4.0 else (1.5 if t >= 6.0 else 0.0)
        objs = [obj(1, 30.0, 0.0 if red else 8.0, -2.0 if 3.0 <= t < 4.0 else 0.0)]
        if 4.0 <= t < 6.0:
            objs.append(obj(7, 15.0, 1.2, 0.0))
        yield "/perception/object_recognition/objects", T["autoware_perception_msgs/msg/PredictedObjects"](
            header=header(t), objects=objs)
        element = T["autoware_perception_msgs/msg/TrafficLightElement"](
            color=1 if red else 3, shape=1, status=2, confidence=1.0)
        yield "/perception/traffic_light_recognition/traffic_signals", \
            T["autoware_perception_msgs/msg/TrafficLightGroupArray"](stamp=time(t), traffic_light_groups=[
                T["autoware_perception_msgs/msg/TrafficLightGroup"](traffic_light_group_id=7, elements=[element])])
        yield "/localization/kinematic_state", T["nav_msgs/msg/Odometry"](
            header=header(t), child_frame_id="base_link",
            pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose(8.0 * t), covariance=cov),
            twist=T["geometry_msgs/msg/TwistWithCovariance"](
                twist=T["geometry_msgs/msg/Twist"](linear=vec(ego_v), angular=vec(0.0)), covariance=cov))
        points = [T["autoware_planning_msgs/msg/TrajectoryPoint"](
            time_from_start=T["builtin_interfaces/msg/Duration"](sec=k, nanosec=0), pose=pose(8.0 * t + k),
            longitudinal_velocity_mps=0.0 if red and k >= 2 else 8.0, lateral_velocity_mps=0.0,
            acceleration_mps2=0.0, heading_rate_rps=0.0, front_wheel_angle_rad=0.0, rear_wheel_angle_rad=0.0)
            for k in range(5)]
        yield "/planning/scenario_planning/trajectory", T["autoware_planning_msgs/msg/Trajectory"](
            header=header(t), points=points)
        yield "/control/command/control_cmd", T["autoware_control_msgs/msg/Control"](
            stamp=time(t), control_time=time(t),
            lateral=T["autoware_control_msgs/msg/Lateral"](
                stamp=time(t), control_time=time(t), steering_tire_angle=0.0, steering_tire_rotation_rate=0.0,
                is_defined_steering_tire_rotation_rate=False),
            longitudinal=T["autoware_control_msgs/msg/Longitudinal"](
                stamp=time(t), control_time=time(t), velocity=ego_v, acceleration=accel, jerk=0.0,
                is_defined_acceleration=True, is_defined_jerk=False))

    bag = out_dir / "autoware_drive"
    with Writer(bag, version=9, storage_plugin=plugin) as writer:
        conns = {topic: writer.add_connection(topic, msgtype, typestore=store) for topic, msgtype in topics.items()}
        for i in range(int(duration_s * 10)):
            t = i / 10.0
            for k, (topic, msg) in enumerate(messages(t)):
                if topic in conns:
                    writer.write(conns[topic], int(t * 1e9) + k * 1000,
                                 store.serialize_cdr(msg, TOPICS[topic]))
    return bag
